package repo

import (
	"encoding/binary"
	"math"
	"sort"
	"strconv"

	"github.com/logbook/logbook/internal/model"
)

// EncodeVector stores an embedding as little-endian float32s.
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// DecodeVector reads what EncodeVector wrote.
func DecodeVector(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// CheckEmbedding validates a passage's embedding against itself (both fields
// or neither, finite numbers) and, when pinnedDims > 0, against the model and
// dimensions pinned for the agent. Errors: KindInvalid naming the field.
func CheckEmbedding(in model.CreatePassage, pinnedModel string, pinnedDims int) error {
	switch {
	case len(in.Embedding) == 0 && in.EmbeddingModel == "":
		return nil
	case len(in.Embedding) == 0:
		return model.Invalid(model.FieldError{Field: "embedding", Message: "is required with embedding_model"})
	case in.EmbeddingModel == "":
		return model.Invalid(model.FieldError{Field: "embedding_model", Message: "is required with embedding"})
	}
	if err := model.CheckVector("embedding", in.Embedding); err != nil {
		return err
	}
	if pinnedDims == 0 {
		return nil
	}
	if in.EmbeddingModel != pinnedModel {
		return model.Invalid(model.FieldError{Field: "embedding_model",
			Message: "the agent's passages are embedded with " + strconv.Quote(pinnedModel)})
	}
	if len(in.Embedding) != pinnedDims {
		return model.Invalid(model.FieldError{Field: "embedding",
			Message: "must have " + strconv.Itoa(pinnedDims) + " numbers, as the agent's other passages"})
	}
	return nil
}

// CheckQueryEmbedding validates a search's query_embedding against the agent's
// pinned dimensions (0: no passage has an embedding, anything goes).
func CheckQueryEmbedding(q []float32, pinnedDims int) error {
	if len(q) == 0 {
		return model.Invalid(model.FieldError{Field: "query_embedding", Message: "is required for mode vector and hybrid"})
	}
	if err := model.CheckVector("query_embedding", q); err != nil {
		return err
	}
	if pinnedDims != 0 && len(q) != pinnedDims {
		return model.Invalid(model.FieldError{Field: "query_embedding",
			Message: "must have " + strconv.Itoa(pinnedDims) + " numbers, as the agent's passages"})
	}
	return nil
}

// Cosine is the cosine similarity of a and b (equal lengths), 0 when either is
// the zero vector.
func Cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot, na, nb = dot+x*y, na+x*x, nb+y*y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// VectorCandidate is a passage with its stored embedding.
type VectorCandidate struct {
	Passage   model.Passage
	Embedding []float32
}

// snippetRunes bounds the snippet of a hit found by meaning only: there are no
// matched words to mark, so it is the passage's beginning.
const snippetRunes = 200

func leadSnippet(s string) string {
	r := []rune(s)
	if len(r) <= snippetRunes {
		return s
	}
	return string(r[:snippetRunes]) + "…"
}

// RankByVector orders candidates by cosine similarity to q, best first (ties:
// newest first, then id descending). Each hit's rank is the cosine distance,
// 1 - similarity: lower is better, as with bm25.
func RankByVector(q []float32, cands []VectorCandidate) []model.PassageHit {
	hits := make([]model.PassageHit, 0, len(cands))
	for _, c := range cands {
		if len(c.Embedding) != len(q) {
			continue
		}
		hits = append(hits, model.PassageHit{Passage: c.Passage, Snippet: leadSnippet(c.Passage.Content), Rank: 1 - Cosine(q, c.Embedding)})
	}
	sort.SliceStable(hits, func(i, j int) bool { return hitLess(hits[i], hits[j]) })
	return hits
}

func hitLess(a, b model.PassageHit) bool {
	if a.Rank != b.Rank {
		return a.Rank < b.Rank
	}
	if a.CreatedAt != b.CreatedAt {
		return a.CreatedAt > b.CreatedAt
	}
	return a.ID > b.ID
}

// RRFK is reciprocal rank fusion's constant k.
const RRFK = 60

// RankPassages answers a vector or hybrid passage search from the vector
// ranking (best first, at least Offset+Limit deep, HybridDepth for hybrid):
// as it is, or fused with the keyword ranking that keyword reads (asked for
// HybridDepth hits from the top). Both backends search this way; only
// reading the rankings differs.
func RankPassages(in model.PassageSearch, vector []model.PassageHit,
	keyword func(model.PassageSearch) ([]model.PassageHit, error)) ([]model.PassageHit, error) {
	if in.Mode == model.SearchVector {
		return PageHits(vector, in.Offset, in.Limit), nil
	}
	kin := in
	kin.Limit, kin.Offset = HybridDepth, 0
	kw, err := keyword(kin)
	if err != nil {
		return nil, err
	}
	return PageHits(FuseRRF(kw, vector[:min(len(vector), HybridDepth)]), in.Offset, in.Limit), nil
}

// VectorDepth is how deep the vector ranking of a search must go.
func VectorDepth(in model.PassageSearch) int {
	if in.Mode == model.SearchHybrid {
		return max(HybridDepth, in.Offset+in.Limit)
	}
	if in.Limit < 0 {
		return -1
	}
	return in.Offset + in.Limit
}

// HybridDepth is how many of each ranking hybrid search fuses.
const HybridDepth = 200

// FuseRRF merges a keyword and a vector ranking (best first each) by reciprocal
// rank fusion: score = Σ 1/(RRFK + position), position from 1. Each hit's rank
// is -score (lower is better); a passage in the keyword ranking keeps its
// marked snippet.
func FuseRRF(keyword, vector []model.PassageHit) []model.PassageHit {
	return fuse(keyword, vector, func(h *model.PassageHit) string { return h.ID },
		func(h *model.PassageHit) *float64 { return &h.Rank }, hitLess)
}

func fuse[T any](keyword, vector []T, key func(*T) string, rank func(*T) *float64, less func(a, b T) bool) []T {
	byID := make(map[string]int, len(keyword)+len(vector))
	out := []T{}
	add := func(list []T) {
		for i, h := range list {
			score := 1 / float64(RRFK+i+1)
			if j, ok := byID[key(&h)]; ok {
				*rank(&out[j]) -= score
				continue
			}
			byID[key(&h)] = len(out)
			*rank(&h) = -score
			out = append(out, h)
		}
	}
	add(keyword)
	add(vector)
	sort.SliceStable(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out
}

// PageHits applies a search's offset and limit (negative limit: no limit) to
// a ranking made in Go.
func PageHits[T any](hits []T, offset, limit int) []T {
	offset = max(offset, 0)
	if offset >= len(hits) {
		return []T{}
	}
	hits = hits[offset:]
	if limit >= 0 && limit < len(hits) {
		hits = hits[:limit]
	}
	return hits
}

// DecodeVectorInto is DecodeVector reusing dst's memory.
func DecodeVectorInto(dst []float32, b []byte) []float32 {
	n := len(b) / 4
	if cap(dst) < n {
		dst = make([]float32, n)
	}
	dst = dst[:n]
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return dst
}
