// A line diff of two texts (a block's versions): the longest common
// subsequence of their lines, by dynamic programming, kept small by trimming
// the common head and tail first.

const MAX_CELLS = 4_000_000;

/** lineDiff answers [{op: " " | "-" | "+", text}] turning a into b. */
export function lineDiff(a, b) {
  const x = a === "" ? [] : a.split("\n");
  const y = b === "" ? [] : b.split("\n");
  let head = 0;
  while (head < x.length && head < y.length && x[head] === y[head]) head++;
  let tail = 0;
  while (tail < x.length - head && tail < y.length - head && x[x.length - 1 - tail] === y[y.length - 1 - tail]) tail++;
  const xs = x.slice(head, x.length - tail);
  const ys = y.slice(head, y.length - tail);
  const out = x.slice(0, head).map((text) => ({ op: " ", text }));
  const n = xs.length;
  const m = ys.length;
  if ((n + 1) * (m + 1) > MAX_CELLS) {
    // Too large to compare line by line here: all out, all in.
    out.push(...xs.map((text) => ({ op: "-", text })), ...ys.map((text) => ({ op: "+", text })));
  } else {
    // lcs[i][j]: the LCS length of xs[i:] and ys[j:], in one flat array.
    const w = m + 1;
    const lcs = new Uint32Array((n + 1) * w);
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        lcs[i * w + j] = xs[i] === ys[j] ? lcs[(i + 1) * w + j + 1] + 1 : Math.max(lcs[(i + 1) * w + j], lcs[i * w + j + 1]);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n && j < m) {
      if (xs[i] === ys[j]) {
        out.push({ op: " ", text: xs[i] });
        i++;
        j++;
      } else if (lcs[(i + 1) * w + j] >= lcs[i * w + j + 1]) {
        out.push({ op: "-", text: xs[i++] });
      } else {
        out.push({ op: "+", text: ys[j++] });
      }
    }
    while (i < n) out.push({ op: "-", text: xs[i++] });
    while (j < m) out.push({ op: "+", text: ys[j++] });
  }
  out.push(...x.slice(x.length - tail).map((text) => ({ op: " ", text })));
  return out;
}
