package ui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	logbook "github.com/logbook/logbook"
	"github.com/logbook/logbook/internal/api"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/sqlite"
	"github.com/rs/zerolog"
)

// TestDashboard drives the dashboard in a real headless Chromium against a
// real server (the API over SQLite in a temporary directory): it seeds data
// through the API, then goes list → session → agent → search → usage as a
// person would, checks what each page shows, follows a session live through
// a cut of its feed, and fails on any request that leaves loopback, any URL
// that holds the key, and any console error. Screenshots go to
// $LOGBOOK_UI_SCREENSHOTS (default: a temporary directory; the path is
// logged). LOGBOOK_UI_LONG=1 (make test-ui) adds paging through many
// sessions and a 1000-message session.
func TestDashboard(t *testing.T) {
	chrome := chromium(t)
	long := os.Getenv("LOGBOOK_UI_LONG") != ""

	srv := startServer(t, false)
	writeKey := srv.key(model.ScopeWrite)
	readKey := srv.key(model.ScopeRead)
	c := &client{t: t, base: srv.url, key: writeKey}
	seed(c)

	b := newBrowser(t, chrome)
	p := b.tab(t, srv.url)

	// The server has keys, so the first call answers 401 and the page asks;
	// turned down, it says what is missing and asks no more until told to.
	p.do(chromedp.Navigate(srv.url + "/ui/"))
	p.do(chromedp.WaitVisible(chromedp.CSS("#key-input")))
	p.waitEq("the dialog says how to make a read key", `(() => { const t = document.getElementById("key-howto").textContent;
		return t.includes("logbook keys create --tenant default --scope read") && t.includes(location.origin + "/v1/admin/keys") && t.includes('"scope": "read"'); })()`, "true")
	p.shot("00-key")
	p.click("#key-cancel")
	p.waitEq("no key, no list", `String(document.querySelector("#view .notice")?.textContent.includes("needs an API key"))`, "true")
	p.waitEq("not asked again", `String(document.getElementById("key-dialog").open)`, "false")
	p.click("#key-button")
	p.do(chromedp.WaitVisible(chromedp.CSS("#key-input")))
	p.do(chromedp.SendKeys(chromedp.CSS("#key-input"), readKey), chromedp.Click(chromedp.CSS("#key-ok")))
	p.keyEntered()
	p.waitEq("key button", `document.getElementById("key-button").textContent`, "Key ✓")

	// Sessions: every one, with the totals the API reports, then filtered.
	sessions := c.sessions()
	p.waitEq("sessions shown", `document.querySelectorAll("#sessions-body tr").length`, strconv.Itoa(len(sessions)))
	p.waitEq("session count", `document.getElementById("sessions-count").textContent`, fmt.Sprintf("%d sessions", len(sessions)))
	var tokens int64
	var cost float64
	for _, s := range sessions {
		tokens += s.TotalTokens
		cost += s.TotalCost
	}
	p.waitEq("token total", `document.getElementById("sessions-tokens").textContent`, commas(tokens))
	p.waitEq("live feed", `document.getElementById("live").dataset.state`, "live")
	p.waitEq("a title is text, not markup", `document.querySelector('#sessions-body tr[data-id="ops-7"] b').textContent`, xssTitle)
	p.waitEq("no injected element", `String(document.querySelector('img[src="x"]') === null && !window.__xss)`, "true")
	p.waitEq("key kept in sessionStorage", `sessionStorage.getItem("logbook.key")`, readKey)
	p.waitEq("the key's scope, as the server says", `document.getElementById("scope").textContent`, "read key")
	p.waitEq("costs with one precision", `document.querySelector('#sessions-body tr[data-id="ops-7"] .cost').textContent + " " + document.getElementById("sessions-cost").textContent`,
		"$0.0100 "+dollars(cost))
	p.shot("01-sessions")

	// Title search, the total it selects, oldest first, an agent by choice.
	p.do(chromedp.SendKeys(chromedp.CSS("#title-filter"), "QUESTION"), chromedp.Click(chromedp.CSS(`#session-filters button[type="submit"]`)))
	p.waitEq("sessions titled so", `[...document.querySelectorAll("#sessions-body tr")].map(r => r.dataset.id).join(",")`, "demo-1-fork,demo-1")
	p.waitEq("their count", `document.getElementById("sessions-count").textContent`, "2 sessions")
	p.do(chromedp.SetValue(chromedp.CSS("#order-filter"), "asc"))
	p.do(chromedp.Evaluate[chromedp.Void](`document.getElementById("order-filter").dispatchEvent(new Event("change"))`))
	p.waitEq("oldest first", `[...document.querySelectorAll("#sessions-body tr")].map(r => r.dataset.id).join(",")`, "demo-1,demo-1-fork")
	p.do(chromedp.Navigate(srv.url + "/ui/#/sessions"))
	p.waitEq("agents to choose from", `[...document.querySelectorAll("#agent-filter option")].map(o => o.value).join(",")`, ",helper-bot,support-bot")
	p.do(chromedp.SetValue(chromedp.CSS("#agent-filter"), "helper-bot"))
	p.do(chromedp.Evaluate[chromedp.Void](`document.getElementById("agent-filter").dispatchEvent(new Event("change", { bubbles: true }))`))
	p.waitEq("the chosen agent's sessions", `[...document.querySelectorAll("#sessions-body tr")].map(r => r.dataset.id).join(",") + " " + document.getElementById("sessions-count").textContent`, "md-1 1 session")
	p.do(chromedp.Navigate(srv.url + "/ui/#/sessions"))
	p.waitEq("all sessions", `document.querySelectorAll("#sessions-body tr").length`, strconv.Itoa(len(sessions)))

	p.do(chromedp.SetValue(chromedp.CSS(`#session-filters select[name="status"]`), "completed"),
		chromedp.Click(chromedp.CSS(`#session-filters button[type="submit"]`)))
	p.waitEq("completed sessions", `[...document.querySelectorAll("#sessions-body tr")].map(r => r.dataset.id).join(",")`, "ops-7")
	p.do(chromedp.SetValue(chromedp.CSS(`#session-filters select[name="status"]`), ""),
		chromedp.SendKeys(chromedp.CSS(`#session-filters input[name="meta"]`), "channel=web"),
		chromedp.Click(chromedp.CSS(`#session-filters button[type="submit"]`)))
	p.waitEq("sessions with channel=web", `[...document.querySelectorAll("#sessions-body tr")].map(r => r.dataset.id).sort().join(",")`, "demo-1,demo-1-fork")
	p.do(chromedp.Navigate(srv.url + "/ui/#/sessions"))
	p.waitEq("all sessions again", `document.querySelectorAll("#sessions-body tr").length`, strconv.Itoa(len(sessions)))
	p.waitEq("live feed", `document.getElementById("live").dataset.state`, "live")

	// The tenant feed brings a new session, then its first message, in place.
	c.do("POST", "/v1/sessions", map[string]any{"id": "live-1", "agent_id": "support-bot", "title": "Arrived live"}, 201)
	p.waitEq("a session created live", `document.querySelector('#sessions-body tr[data-id="live-1"] b')?.textContent`, "Arrived live")
	c.do("POST", "/v1/sessions/live-1/messages", map[string]any{"role": "user", "content": "Hello?", "tokens": 1234}, 201)
	p.waitEq("its tokens, live", `document.querySelector('#sessions-body tr[data-id="live-1"] .tokens').textContent`, "1,234")
	p.waitEq("its status, live", `document.querySelector('#sessions-body tr[data-id="live-1"] .badge').textContent`, "active")
	p.shot("02-sessions-live")

	// A session: the conversation with its tool calls folded, an image, reasoning.
	p.click(`#sessions-body tr[data-id="demo-1"] a`)
	p.waitEq("messages shown", `document.getElementById("conversation-count")?.textContent`, "(6)")
	p.waitEq("articles (results fold into their calls)", `document.querySelectorAll("#conversation > article").length`, "5")
	p.waitEq("call 1 folded with its result", `document.querySelector('details.tool-call[data-call-id="call_1"] .state').textContent`, "result #3")
	p.waitEq("the result inside the call", `String(document.querySelector('details.tool-call[data-call-id="call_1"] .tool-result').textContent.includes("delivered"))`, "true")
	p.waitEq("call 2 has no result", `document.querySelector('details.tool-call[data-call-id="call_2"] .state').textContent`, "no result yet")
	p.waitEq("per-message tokens", `document.querySelector("#m-5 .tokens").textContent`, "900 tok")
	p.waitEq("per-message cost", `document.querySelector("#m-2 .cost").textContent`, "$0.0004")
	p.waitEq("a tool's JSON, pretty-printed in monospace", `document.querySelector('details.tool-call[data-call-id="call_1"] pre.tool-output.json').textContent`,
		"{\n  \"status\": \"delivered\",\n  \"refundable\": true\n}")
	p.waitEq("a read key sees no action", `document.querySelectorAll(".act, #resume-repair").length + " " + (document.getElementById("session-actions") === null)`, "0 true")
	p.waitEq("reasoning collapsed", `String(document.querySelector("#m-4 details.reasoning").open)`, "false")
	p.waitEq("reasoning summary", `document.querySelector("#m-4 details.reasoning p").textContent`, "The order is refundable.")
	p.waitEq("image from a blob: URL", `(() => { const i = document.querySelector("#m-5 img"); return i.src.startsWith("blob:") + " " + i.naturalWidth; })()`, "true 8")
	p.waitEq("markup in content is text", `String(document.querySelector("#m-1 .text").textContent.includes("<script>"))`, "true")
	p.waitEq("checkpoints", `document.querySelectorAll("#checkpoints details.checkpoint").length`, "2")
	p.waitEq("latest checkpoint open with its state tree", `(() => { const d = document.querySelector("#checkpoints details.checkpoint"); return d.open + " " + d.dataset.iteration + " " + [...d.querySelectorAll(".tree .key")].map(k => k.textContent).join("") })()`,
		"true 2 plan: done: steps: 0: 1: stop_reason: ")
	p.waitEq("compaction", `document.querySelectorAll("#compactions li").length + " " + document.querySelector(".compaction-marker").dataset.through`, "1 3")
	p.waitEq("fork tree", `[...document.querySelectorAll("#fork-tree li")].map(l => l.dataset.id).join(",")`, "demo-1,demo-1-fork")
	p.waitEq("resume report", `document.getElementById("resume-status").textContent + " " + [...document.querySelectorAll("#resume li.problem")].map(l => l.dataset.code).join(",")`,
		"1 problem unanswered_tool_call")
	p.waitEq("live feed", `document.getElementById("live").dataset.state`, "live")
	p.click("#context-panel summary")
	p.click(`#context-form button[type="submit"]`)
	p.waitEq("what the model sees: the blocks, the summary, the messages after it", `[...document.querySelectorAll("#context-view .context-blocks li")].map(l => l.dataset.label).join(",") + " " +
		[...document.querySelectorAll("#context-view .context-messages li")].map(l => l.dataset.seq).join(",") + " " + document.querySelector("#context-view .compaction-marker b").textContent`,
		"human,persona 4,5,6 Compaction through #3")
	p.shot("03-session")

	// A fork: where its inherited messages end.
	p.do(chromedp.Evaluate[chromedp.Void](`location.hash = "#/sessions/demo-1-fork"`))
	p.waitEq("the fork's own message", `document.querySelector("#m-5 .text")?.textContent`, "And order 1043?")
	p.waitEq("the end of the inherited messages", `document.querySelector("#m-4").nextElementSibling.id + " " + document.getElementById("fork-marker").dataset.through`, "fork-marker 4")
	p.shot("03a-fork")

	// Markdown, safely: hostile markup stays text, links only to http(s).
	p.do(chromedp.Evaluate[chromedp.Void](`location.hash = "#/sessions/md-1"`))
	p.waitEq("emphasis, code and lists", `(() => { const m = document.querySelector("#m-1 .md"); return [m.querySelector("strong").textContent, m.querySelector("em").textContent,
		m.querySelector("p code").textContent, [...m.querySelectorAll("li")].map(l => l.textContent).join("+"), m.querySelector("pre.md-code").textContent].join("|"); })()`,
		"Bold|em|code <b>x</b>|one+two nested|<script>window.__xss=1</script>")
	p.waitEq("only the http(s) link is a link", `[...document.querySelectorAll("#m-1 a")].map(a => a.getAttribute("href") + " " + a.rel + " " + a.target).join(",")`,
		"https://example.com/a?b=1 noopener noreferrer _blank")
	p.waitEq("hostile markup is text", `String(document.querySelector("#m-1").textContent.includes('<img src=x onerror="window.__xss=1">') &&
		document.querySelector("#m-1").textContent.includes('<a href="javascript:window.__xss=1">raw</a>'))`, "true")
	p.waitEq("nothing ran, nothing was made", `document.querySelectorAll("#conversation img, #conversation script, #conversation iframe, #conversation [onerror]").length + " " + String(window.__xss)`, "0 undefined")
	p.waitEq("a long output, folded", `(() => { const d = document.querySelector('details.tool-call[data-call-id="call_long"] details.fold'); return d.open + " " + d.querySelector("summary").textContent; })()`,
		"false line 1 of a long output 40 lines, 990 characters")
	p.shot("03c-markdown")

	// A long session, a page at a time: earlier pages on demand, a link to
	// an old message shows the part around it.
	p.do(chromedp.Evaluate[chromedp.Void](`location.hash = "#/sessions/pages-1"`))
	p.waitEq("the newest page", `document.getElementById("conversation-count")?.textContent + " " + document.querySelector("#conversation > article").dataset.seq`, "(200 of 450) 251")
	for _, want := range []string{"(400 of 450) 51", "(450) 1"} {
		p.click("#messages-earlier")
		p.waitEq("an earlier page", `document.getElementById("conversation-count")?.textContent + " " + document.querySelector("#conversation > article").dataset.seq`, want)
	}
	p.waitEq("nothing earlier", `String(document.getElementById("messages-earlier").hidden)`, "true")
	p.do(chromedp.Evaluate[chromedp.Void](`location.hash = "#/sessions/pages-1?seq=5"`))
	p.waitEq("the part around an old message", `document.getElementById("conversation-count")?.textContent + " " + document.querySelector("#conversation .msg.target")?.dataset.seq`, "(200 of 450) 5")
	p.click("#messages-later")
	p.waitEq("a later page", `document.getElementById("conversation-count")?.textContent + " " + [...document.querySelectorAll("#conversation > article")].pop().dataset.seq`, "(400 of 450) 400")
	p.do(chromedp.Evaluate[chromedp.Void](`location.hash = "#/sessions/demo-1"`))
	p.waitEq("back to the session", `document.getElementById("conversation-count")?.textContent`, "(6)")

	// A graph's thread: its checkpoints as a tree, by namespace, the line to
	// the latest apart from the branch, with pending writes.
	p.do(chromedp.Evaluate[chromedp.Void](`location.hash = "#/sessions/graph-1"`))
	p.waitEq("namespaces", `[...document.querySelectorAll("#checkpoints .ck-namespace")].map(n => JSON.stringify(n.dataset.namespace)).join(",")`, `"","tools:1"`)
	p.waitEq("newest first, the line to the latest in lane 0", `[...document.querySelectorAll('#checkpoints .ck-namespace[data-namespace=""] details.checkpoint')].map(d => d.dataset.clientId + d.dataset.lane).join(",")`,
		"d0,c1,b1,a0")
	p.waitEq("parents", `[...document.querySelectorAll('#checkpoints details.checkpoint')].map(d => d.dataset.parentId || "-").join(",")`, "a,b,a,-,-")
	p.waitEq("the fork point", `document.querySelector('#checkpoints details[data-client-id="a"] .badge.fork').textContent`, "2 branches")
	p.waitEq("pending writes", `[...document.querySelectorAll('#checkpoints details[data-client-id="c"] .pending-writes li')].map(l => l.dataset.channel).join(",") + " " + document.querySelector('#checkpoints details[data-client-id="c"] .badge.writes').textContent`,
		"__interrupt__,messages 2 writes")
	p.waitEq("the latest open", `String(document.querySelector("#checkpoints details.checkpoint").open)`, "true")
	p.shot("03b-checkpoint-tree")
	p.do(chromedp.Evaluate[chromedp.Void](`history.back()`))
	p.waitEq("back to the session", `document.getElementById("session-title")?.textContent`, "Refund question")

	// Live: a result folds into its call, a new message appears, the counters follow.
	c.do("POST", "/v1/sessions/demo-1/messages", map[string]any{"role": "tool", "tool_call_id": "call_2", "name": "get_weather", "content": "Sunny, 21°C"}, 201)
	p.waitEq("a result folded live", `document.querySelector('details.tool-call[data-call-id="call_2"] .state').textContent`, "result #7")
	c.do("POST", "/v1/sessions/demo-1/messages", map[string]any{"role": "assistant", "content": "It is sunny in Paris.", "model": "gpt-4o", "tokens": 7, "cost": 0.0001}, 201)
	p.waitEq("a message appended live", `document.querySelector("#m-8 .text")?.textContent`, "It is sunny in Paris.")
	p.waitEq("the header's count follows", `document.getElementById("session-messages").textContent`, "8")
	p.waitEq("the resume report follows", `document.getElementById("resume-status").textContent`, "ready to resume")

	// Cut the feed: the page reconnects with Last-Event-ID and misses nothing.
	if n := srv.cutFeeds(); n == 0 {
		t.Fatal("no live feed was open to cut")
	}
	c.do("POST", "/v1/sessions/demo-1/messages", map[string]any{"role": "user", "content": "Thanks, bye!", "tokens": 3}, 201)
	p.waitEq("a message appended while cut off", `document.querySelector("#m-9 .text")?.textContent`, "Thanks, bye!")
	p.waitEq("live again", `document.getElementById("live").dataset.state`, "live")
	if ids := srv.resumedFrom("/v1/sessions/demo-1/events"); len(ids) == 0 {
		t.Error("the page reconnected without Last-Event-ID")
	} else {
		t.Logf("the session feed resumed with Last-Event-ID %v", ids)
	}
	p.waitEq("no message twice", `[...document.querySelectorAll("#conversation [data-seq]")].map(e => e.dataset.seq).join(",")`, "1,2,3,4,5,6,7,8,9")
	p.waitEq("the header's count, after the cut", `document.getElementById("session-messages").textContent`, "9")

	// A rewind takes its messages out of the page too.
	c.do("POST", "/v1/sessions/demo-1/rewind", map[string]any{"to_seq": 8, "expected_last_seq": 9}, 200)
	p.waitEq("rewound", `[...document.querySelectorAll("#conversation [data-seq]")].map(e => e.dataset.seq).join(",")`, "1,2,3,4,5,6,7,8")
	p.waitEq("the header's count, after the rewind", `document.getElementById("session-messages").textContent`, "8")
	p.shot("04-session-live")

	// The agent: blocks, a block's history with a diff, passages.
	p.click(`#session-head a[href="#/agents/support-bot"]`)
	p.waitEq("agent", `document.getElementById("agent-name")?.textContent`, "Support bot")
	p.waitEq("blocks", `[...document.querySelectorAll("#blocks .block-card")].map(b => b.dataset.label).join(",")`, "human,persona")
	p.waitEq("block value", `document.querySelector('.block-card[data-label="human"] .block-value').textContent`, "Name: Ann\nPrefers phone calls")
	p.click(`.block-card[data-label="human"] .history-toggle`)
	p.waitEq("versions", `document.querySelector('.block-card[data-label="human"] .versions b')?.textContent`, "3 versions")
	p.waitEq("diff of the last edit", `[...document.querySelectorAll('.block-card[data-label="human"] .diff div')].map(d => d.className + ":" + d.textContent).join("|")`,
		"same:  Name: Ann|del:- Prefers email|add:+ Prefers phone calls")
	p.do(chromedp.SetValue(chromedp.CSS(`.block-card[data-label="human"] select.diff-from`), "1"))
	p.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('.block-card[data-label="human"] select.diff-from').dispatchEvent(new Event("change"))`))
	p.waitEq("diff of v1 and v3", `[...document.querySelectorAll('.block-card[data-label="human"] .diff div')].map(d => d.className + ":" + d.textContent).join("|")`,
		"same:  Name: Ann|add:+ Prefers phone calls")
	p.waitEq("passages", `document.querySelectorAll("#passages li").length`, "3")
	p.waitEq("their embeddings", `[...document.querySelectorAll("#passages li")].map(l => l.querySelector(".badge.embedding")?.dataset.embedding || "-").join(",")`, "ready,-,-")
	p.waitEq("a shared block, marked", `document.querySelector('.block-card[data-label="human"] .badge.shared')?.textContent`, "shared with 1 agent")
	p.waitEq("a read key edits nothing", `document.querySelectorAll(".act").length`, "0")
	p.shot("05-agent")

	// Search: the agent's conversations, its archival memory, then the tenant.
	c.waitIndexed("sunny")
	p.do(chromedp.SendKeys(chromedp.CSS("#agent-search-q"), "refund"), chromedp.Click(chromedp.CSS(`#agent-search button[type="submit"]`)))
	p.waitEq("conversation hits", `String(document.querySelectorAll("#agent-search-results .message-hits li").length >= 2)`, "true")
	p.waitEq("matched words marked", `String(document.querySelector("#agent-search-results mark")?.textContent.toLowerCase().startsWith("refund"))`, "true")
	p.waitEq("hits under their sessions' titles", `document.querySelector("#agent-search-results .message-hits .hit-title")?.textContent`, "Refund question")
	p.do(chromedp.SetValue(chromedp.CSS("#agent-search-scope"), "archival"), chromedp.Click(chromedp.CSS(`#agent-search button[type="submit"]`)))
	p.waitEq("archival hits", `document.querySelectorAll("#agent-search-results .passage-hits li").length + " " + document.querySelector("#agent-search-results mark")?.textContent`, "1 refunded")
	// No embedding endpoint here: a search by meaning is answered 422, and
	// the page stops offering it.
	p.do(chromedp.SetValue(chromedp.CSS("#agent-search-mode"), "vector"), chromedp.Click(chromedp.CSS(`#agent-search button[type="submit"]`)))
	p.waitEq("search by meaning withdrawn", `String(document.getElementById("agent-search-mode-field").hidden) + " " + Boolean(document.getElementById("meaning-unavailable"))`, "true true")
	p.waitEq("searched by words instead", `document.querySelectorAll("#agent-search-results .passage-hits li").length`, "1")
	p.shot("06-agent-search")

	p.click(`#nav a[data-nav="search"]`)
	p.do(chromedp.SendKeys(chromedp.CSS("#search-q"), "receipt"), chromedp.Click(chromedp.CSS(`#search-form button[type="submit"]`)))
	p.waitEq("tenant search hits", `[...document.querySelectorAll("#search-results .message-hits li")].map(l => l.dataset.sessionId + "#" + l.dataset.seq).sort().join(",")`, "demo-1#5")
	p.waitEq("under their sessions' titles", `document.querySelector("#search-results .hit-title")?.textContent`, "Refund question")
	p.shot("07-search")
	p.click(`#search-results .message-hits li a`)
	p.waitEq("the hit's message, marked", `document.querySelector("#conversation .msg.target")?.dataset.seq`, "5")

	// Usage: charts when the server has GET /v1/usage, a notice when it has not.
	p.click(`#nav a[data-nav="usage"]`)
	status, usage := c.usage()
	switch status {
	case http.StatusNotFound:
		p.waitEq("usage not available", `document.getElementById("usage-unavailable")?.textContent`, "Usage is not available on this server.")
	case http.StatusOK:
		p.waitEq("usage tokens", `document.getElementById("usage-tokens")?.textContent`, commas(usage.Total.Tokens))
		p.waitEq("a column per day", `document.querySelectorAll("#usage-day rect.bar").length`, "60")
		p.waitEq("the agent's bar", `String(document.querySelectorAll('#usage-agent rect.bar[data-key="support-bot"]').length > 0)`, "true")
		p.waitEq("the model's bar", `String(document.querySelectorAll('#usage-model rect.bar[data-key="gpt-4o"]').length > 0)`, "true")
	default:
		t.Errorf("GET /v1/usage answered %d; the page shows: %s", status, p.eval(`document.getElementById("usage").textContent`))
	}
	p.shot("08-usage")

	// Items: the shared space's namespaces, a step at a time, an item's
	// value as a tree, then one user's space.
	p.click(`#nav a[data-nav="items"]`)
	p.waitEq("top namespaces", `[...document.querySelectorAll("#namespaces li")].map(l => l.dataset.ns).join(",")`, "users")
	p.waitEq("every shared item", `[...document.querySelectorAll("#items details.item")].map(d => d.dataset.ns + "/" + d.dataset.key).join(",")`,
		"users.ann.memories/food,users.ann.memories/pet,users.bob.memories/food")
	p.click(`#namespaces li[data-ns="users"] a`)
	p.waitEq("one level down", `[...document.querySelectorAll("#namespaces li")].map(l => l.dataset.ns).join(",")`, "users.ann,users.bob")
	p.click(`#namespaces li[data-ns="users.ann"] a`)
	p.waitEq("ann's items", `[...document.querySelectorAll("#items details.item")].map(d => d.dataset.key).join(",")`, "food,pet")
	p.waitEq("breadcrumbs", `document.getElementById("items-crumbs").textContent`, "shared items / users / ann")
	p.click(`#items details.item[data-key="food"] summary`)
	p.waitEq("the value as a tree", `[...document.querySelectorAll('#items details.item[data-key="food"] .tree .key')].map(k => k.textContent).join("")`, "stars: text: ")
	p.waitEq("its version", `document.querySelector('#items details.item[data-key="food"] .badge').textContent`, "v2")
	p.shot("09-items")
	p.do(chromedp.Navigate(srv.url + "/ui/#/items?ns=users.bob.memories"))
	p.waitEq("markup in a value is text", `String(document.querySelector('#items details.item[data-key="food"] .tree .str').textContent.includes("<b>soup</b>"))`, "true")
	p.do(chromedp.Navigate(srv.url + "/ui/#/items?user_id=ann"))
	p.waitEq("ann's own space", `[...document.querySelectorAll("#items details.item")].map(d => d.dataset.ns + "/" + d.dataset.key).join(",")`, "prefs/theme")

	// The event-stream parser and the line diff, on awkward input.
	p.checkModules()

	if long {
		longRun(t, c, p, srv)
	}
	p.noKeyInURLs(readKey)
	p.check()

	// Open mode: a server without keys is used without asking for one. This
	// one answers GET /v1/usage 404, as a server from before the usage API.
	open := startServer(t, true)
	oc := &client{t: t, base: open.url}
	oc.do("POST", "/v1/sessions", map[string]any{"id": "open-1", "title": "No key needed"}, 201)
	q := b.tab(t, open.url)
	q.do(chromedp.Navigate(open.url + "/ui/"))
	q.waitEq("open mode lists without a key", `[...document.querySelectorAll("#sessions-body tr")].map(r => r.dataset.id).join(",")`, "open-1")
	q.waitEq("no key asked", `String(document.getElementById("key-dialog").open)`, "false")
	q.waitEq("live in open mode", `document.getElementById("live").dataset.state`, "live")
	q.shot("10-open-mode")
	q.click(`#nav a[data-nav="usage"]`)
	q.waitEq("usage not available", `document.getElementById("usage-unavailable")?.textContent`, "Usage is not available on this server.")
	q.shot("11-usage-unavailable")
	q.check()
}

// longRun is make test-ui's part: keyset paging through many sessions, a
// session of 5200 messages shown a page at a time, and a search past its
// first 50 hits.
func longRun(t *testing.T, c *client, p *tab, srv *server) {
	const extra = 130
	for i := range extra {
		c.do("POST", "/v1/sessions", map[string]any{"id": fmt.Sprintf("bulk-%03d", i), "agent_id": "bulk-bot", "metadata": map[string]any{"batch": "long"}}, 201)
	}
	const long = 5200
	c.do("POST", "/v1/sessions", map[string]any{"id": "long-1", "agent_id": "bulk-bot", "title": "A long session"}, 201)
	for first := 0; first < long; first += 1000 {
		var msgs []map[string]any
		for i := first; i < min(first+1000, long); i++ {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			msgs = append(msgs, map[string]any{"role": role, "content": fmt.Sprintf("message %d of a long session", i+1), "tokens": 10})
		}
		c.do("POST", "/v1/sessions/long-1/messages/batch", map[string]any{"messages": msgs}, 201)
	}

	total := len(c.sessions())
	p.do(chromedp.Navigate(srv.url + "/ui/#/sessions?agent_id=bulk-bot"))
	p.waitEq("first page", `document.querySelectorAll("#sessions-body tr").length`, "50")
	for _, want := range []string{"100", strconv.Itoa(extra + 1)} {
		p.click("#sessions-more")
		p.waitEq("next page", `document.querySelectorAll("#sessions-body tr").length`, want)
	}
	p.waitEq("no more pages", `String(document.getElementById("sessions-more").hidden)`, "true")
	p.do(chromedp.Navigate(srv.url + "/ui/#/sessions"))
	p.waitEq("first page of all", `document.querySelectorAll("#sessions-body tr").length`, "50")
	p.shot("12-long-paging")
	t.Logf("paged through %d sessions", total)

	start := time.Now()
	p.do(chromedp.Navigate(srv.url + "/ui/#/sessions/long-1"))
	p.waitEq("a long conversation, its newest page", `document.getElementById("conversation-count")?.textContent + " " + document.querySelector("#conversation > article")?.dataset.seq`,
		"(200 of 5,200) 5001")
	p.waitEq("its last message", `document.querySelector("#m-5200 .text")?.textContent`, "message 5200 of a long session")
	t.Logf("the newest page of a 5200-message session rendered in %v", time.Since(start).Round(time.Millisecond))
	for _, want := range []string{"(400 of 5,200) 4801", "(600 of 5,200) 4601"} {
		p.click("#messages-earlier")
		p.waitEq("an earlier page", `document.getElementById("conversation-count")?.textContent + " " + document.querySelector("#conversation > article").dataset.seq`, want)
	}
	// A link to its first message shows the part around it, not all 5200.
	p.do(chromedp.Navigate(srv.url + "/ui/#/sessions/long-1?seq=1"))
	p.waitEq("the part around #1", `document.getElementById("conversation-count")?.textContent + " " + document.querySelector("#conversation .msg.target")?.dataset.seq`,
		"(200 of 5,200) 1")
	p.waitEq("nothing before it", `String(document.getElementById("messages-earlier").hidden) + " " + document.getElementById("messages-later").hidden`, "true false")
	p.shot("13-long-session")

	// Titles of many sessions, counted; a search past its first 50 hits.
	p.do(chromedp.Navigate(srv.url + "/ui/#/sessions?title=long"))
	p.waitEq("a title among many", `[...document.querySelectorAll("#sessions-body tr")].map(r => r.dataset.id).join(",") + " " + document.getElementById("sessions-count").textContent`,
		"long-1 1 session")
	c.waitIndexed("session")
	p.do(chromedp.Navigate(srv.url + "/ui/#/search?q=long+session"))
	p.waitEq("the best 50 hits", `document.querySelectorAll("#search-results .message-hits li").length + " " + document.querySelector("#search-results .hit-title")?.textContent`, "50 A long session")
	for _, want := range []string{"100", "200"} {
		p.click("#search-more")
		p.waitEq("more hits", `String(document.querySelectorAll("#search-results .message-hits li").length)`, want)
	}
	p.waitEq("the most a search answers", `document.getElementById("search-more").hidden + " " + document.getElementById("search-more-note").textContent.startsWith("These are the best 200")`, "true true")
}

const xssTitle = `Nightly <b>report</b> <img src=x onerror="window.__xss=1">`

// hostileMarkdown is Markdown a page must render as it means, with every
// piece of markup in it shown as text and nothing that could run.
const hostileMarkdown = "**Bold** and *em* and `code <b>x</b>` and [safe](https://example.com/a?b=1) and " +
	"[bad](javascript:window.__xss=1) and [data](data:text/html,<script>window.__xss=1</script>) and " +
	`<img src=x onerror="window.__xss=1"> and <a href="javascript:window.__xss=1">raw</a>` + "\n\n" +
	"- one\n- two *nested*\n\n```html\n<script>window.__xss=1</script>\n```\n"

// dollars formats n as the page does: $ with four decimals.
func dollars(n float64) string {
	return "$" + strconv.FormatFloat(n, 'f', 4, 64)
}

// seed writes what the pages show, through the API as a runtime would.
func seed(c *client) {
	c.do("POST", "/v1/agents", map[string]any{"id": "support-bot", "name": "Support bot", "model": "gpt-4o", "tags": []string{"prod"},
		"system": "You help customers with refunds."}, 201)
	c.do("PUT", "/v1/agents/support-bot/blocks/human", map[string]any{"value": "Name: Ann", "limit": 2000}, 0)
	c.do("PUT", "/v1/agents/support-bot/blocks/persona", map[string]any{"value": "A careful support agent.", "read_only": true}, 0)
	c.do("POST", "/v1/agents/support-bot/blocks/human/append", map[string]any{"content": "Prefers email"}, 0)
	c.do("POST", "/v1/agents/support-bot/blocks/human/replace", map[string]any{"old": "email", "new": "phone calls"}, 0)
	c.do("POST", "/v1/agents/support-bot/archival", map[string]any{"content": "Ann was refunded for order 1042 on 2026-11-22.", "tags": []string{"billing"}}, 201)
	c.do("POST", "/v1/agents/support-bot/archival", map[string]any{"content": "Ann likes phone calls after 5pm.", "tags": []string{"contact"}}, 201)

	var file struct {
		ID string `json:"id"`
	}
	c.decode(c.raw("POST", "/v1/files", "image/png", tinyPNG(c.t), 201), &file)

	c.do("POST", "/v1/sessions", map[string]any{"id": "demo-1", "agent_id": "support-bot", "title": "Refund question",
		"metadata": map[string]any{"channel": "web"}}, 201)
	c.do("POST", "/v1/sessions/demo-1/messages/batch", map[string]any{"messages": []map[string]any{
		{"role": "user", "content": "Can I get a refund for order 1042? <script>window.__xss=1</script>", "tokens": 12},
		{"role": "assistant", "content": "", "model": "gpt-4o", "tokens": 40, "cost": 0.0004,
			"tool_calls": []map[string]any{{"id": "call_1", "name": "lookup_order", "arguments": `{"order_id": 1042}`}}},
	}}, 201)
	c.do("PUT", "/v1/sessions/demo-1/checkpoint", map[string]any{"iteration": 1, "expected_iteration": 0, "state": map[string]any{
		"pending_tool_calls": []map[string]any{{"id": "call_1", "tool_name": "lookup_order", "tool_input": map[string]any{"order_id": 1042}}},
		"plan":               map[string]any{"steps": []string{"look up the order", "answer"}, "done": false},
	}}, 201)
	c.do("POST", "/v1/sessions/demo-1/messages/batch", map[string]any{"messages": []map[string]any{
		{"role": "tool", "tool_call_id": "call_1", "name": "lookup_order", "content": `{"status": "delivered", "refundable": true}`},
		{"role": "assistant", "model": "o4-mini", "tokens": 25, "cost": 0.0003, "content": []map[string]any{
			{"type": "reasoning", "summary": []string{"The order is refundable."}, "encrypted_content": "gAAAAB-opaque"},
			{"type": "text", "text": "Yes: order 1042 is refundable."}}},
		{"role": "user", "tokens": 900, "content": []map[string]any{
			{"type": "text", "text": "Here is the receipt."},
			{"type": "image", "file_id": file.ID, "detail": "high"}}},
		{"role": "assistant", "content": "", "model": "gpt-4o", "tokens": 30, "cost": 0.0002,
			"tool_calls": []map[string]any{{"id": "call_2", "name": "get_weather", "arguments": `{"city": "Paris"}`}}},
	}}, 201)
	// The latest checkpoint lists no pending call: call_2 has no result, so
	// resume reports it until the result comes.
	c.do("PUT", "/v1/sessions/demo-1/checkpoint", map[string]any{"iteration": 2, "expected_iteration": 1, "state": map[string]any{
		"plan":        map[string]any{"steps": []string{"look up the order", "answer"}, "done": true},
		"stop_reason": "tool_use",
	}}, 201)
	c.do("POST", "/v1/sessions/demo-1/compactions", map[string]any{"through_seq": 3, "summary": "Ann asked for a refund; order 1042 was delivered.", "tokens": 15}, 201)
	c.do("POST", "/v1/sessions/demo-1/fork", map[string]any{"id": "demo-1-fork", "at_seq": 4}, 201)
	c.do("POST", "/v1/sessions/demo-1-fork/messages", map[string]any{"role": "user", "content": "And order 1043?", "tokens": 8}, 201)

	// A graph runtime's thread: a line a → b → c, a fork d from a (time
	// travel), a subgraph's namespace, pending writes on c.
	for _, w := range []map[string]any{
		{"client_id": "a", "state": map[string]any{"step": 0}, "metadata": map[string]any{"source": "input"}, "create_session": true},
		{"client_id": "b", "parent_id": "a", "state_patch": map[string]any{"step": 1}, "metadata": map[string]any{"source": "loop"}},
		{"client_id": "c", "parent_id": "b", "state_patch": map[string]any{"step": 2}, "metadata": map[string]any{"source": "loop"}},
		{"namespace": "tools:1", "client_id": "x", "state": map[string]any{"inner": true}, "metadata": map[string]any{"source": "loop"}},
		{"client_id": "d", "parent_id": "a", "state_patch": map[string]any{"step": 9}, "metadata": map[string]any{"source": "update"}},
	} {
		c.do("POST", "/v1/sessions/graph-1/checkpoints", w, 201)
	}
	c.do("POST", "/v1/sessions/graph-1/checkpoint-writes", map[string]any{"checkpoint_id": "c", "task_id": "task-1",
		"writes": []map[string]any{{"channel": "messages", "value": []string{"json", "hi"}}, {"channel": "__interrupt__", "value": "stop"}}}, 204)

	c.do("POST", "/v1/sessions", map[string]any{"id": "ops-7", "agent_id": "ops-bot", "title": xssTitle, "metadata": map[string]any{"channel": "cron"}}, 201)
	c.do("POST", "/v1/sessions/ops-7/messages", map[string]any{"role": "user", "content": "Summarise the night.", "model": "gpt-4o-mini", "tokens": 100, "cost": 0.01}, 201)
	c.do("DELETE", "/v1/sessions/ops-7", nil, 200)

	// Another agent sharing support-bot's human block; a passage with an embedding.
	c.do("POST", "/v1/agents", map[string]any{"id": "helper-bot", "name": "helper-bot"}, 201)
	c.do("POST", "/v1/agents/helper-bot/blocks/attach", map[string]any{"agent_id": "support-bot", "label": "human"}, 0)
	c.do("POST", "/v1/agents/support-bot/archival", map[string]any{"content": "Passages can be **embedded**.", "embedding": []float32{1, 0, 0}, "embedding_model": "test-model"}, 201)

	// Markdown with hostile markup, and a long tool output.
	c.do("POST", "/v1/sessions", map[string]any{"id": "md-1", "agent_id": "helper-bot", "title": "Markdown"}, 201)
	var long []string
	for i := range 40 {
		long = append(long, fmt.Sprintf("line %d of a long output", i+1))
	}
	c.do("POST", "/v1/sessions/md-1/messages/batch", map[string]any{"messages": []map[string]any{
		{"role": "user", "content": hostileMarkdown},
		{"role": "assistant", "content": "", "tool_calls": []map[string]any{{"id": "call_long", "name": "read_log", "arguments": "{}"}}},
		{"role": "tool", "tool_call_id": "call_long", "content": strings.Join(long, "\n")},
	}}, 201)

	// A session longer than a page.
	c.do("POST", "/v1/sessions", map[string]any{"id": "pages-1", "title": "Many pages"}, 201)
	var page []map[string]any
	for i := range 450 {
		page = append(page, map[string]any{"role": []string{"user", "assistant"}[i%2], "content": fmt.Sprintf("page message %d", i+1)})
	}
	c.do("POST", "/v1/sessions/pages-1/messages/batch", map[string]any{"messages": page}, 201)

	c.do("PUT", "/v1/items/users.ann.memories/food", map[string]any{"value": map[string]any{"text": "Ann likes noodles", "stars": 4}}, 201)
	c.do("PUT", "/v1/items/users.ann.memories/food", map[string]any{"value": map[string]any{"text": "Ann likes ramen", "stars": 5}}, 200)
	c.do("PUT", "/v1/items/users.ann.memories/pet", map[string]any{"value": map[string]any{"text": "Ann has a dog"}}, 201)
	c.do("PUT", "/v1/items/users.bob.memories/food", map[string]any{"value": map[string]any{"text": "Bob likes <b>soup</b>"}}, 201)
	c.do("PUT", "/v1/items/prefs/theme?user_id=ann", map[string]any{"value": map[string]any{"theme": "dark"}}, 201)
}

func tinyPNG(t *testing.T) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	for x := range 8 {
		for y := range 8 {
			img.Set(x, y, color.RGBA{R: uint8(30 * x), G: 80, B: uint8(30 * y), A: 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// commas formats n as the page does (en-US grouping).
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// --- the server ---

type server struct {
	t     *testing.T
	url   string
	store *sqlite.Store

	noUsage bool // answer GET /v1/usage 404, as a server without the route

	mu      sync.Mutex
	feeds   map[*http.Request]context.CancelFunc
	resumes map[string][]string // feed path → Last-Event-ID values it was asked to resume from
	writes  []write             // the writes the pages sent, in order
}

// write is a request that changes something, as the server got it.
type write struct {
	method, path, query, idempotencyKey, ifMatch string
}

// startServer serves the API with a SQLite store in a temporary directory on
// a loopback port, behind a wrapper that can cut the live feeds it serves
// (and, with noUsage, hide GET /v1/usage).
func startServer(t *testing.T, noUsage bool) *server {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "logbook.db"), Migrate: true})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	a := api.New(api.Config{Store: st, Log: zerolog.Nop(), AllowOpen: true, Spec: logbook.OpenAPI})
	s := &server{t: t, store: st, noUsage: noUsage, feeds: map[*http.Request]context.CancelFunc{}, resumes: map[string][]string{}}
	ts := httptest.NewServer(s.wrap(a))
	t.Cleanup(ts.Close)
	t.Cleanup(a.Close) // ends the live feeds first, or Close would wait on them
	s.url = ts.URL
	return s
}

func (s *server) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.noUsage && r.URL.Path == "/v1/usage" {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"type":"urn:logbook:problem:not_found","title":"Not Found","status":404,"detail":"no route GET /v1/usage","code":"not_found"}`)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && strings.HasPrefix(r.URL.Path, "/v1/") && r.Header.Get("User-Agent") != seedAgent {
			s.mu.Lock()
			s.writes = append(s.writes, write{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Idempotency-Key"), r.Header.Get("If-Match")})
			s.mu.Unlock()
		}
		if !strings.HasSuffix(r.URL.Path, "/events") {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		s.mu.Lock()
		s.feeds[r] = cancel
		if id := r.Header.Get("Last-Event-ID"); id != "" {
			s.resumes[r.URL.Path] = append(s.resumes[r.URL.Path], id)
		}
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.feeds, r)
			s.mu.Unlock()
			cancel()
		}()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// cutFeeds ends every live feed being served, as a proxy or a network would.
func (s *server) cutFeeds() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cancel := range s.feeds {
		cancel()
	}
	return len(s.feeds)
}

// pageWrites are the writes the pages sent so far.
func (s *server) pageWrites() []write {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]write(nil), s.writes...)
}

func (s *server) resumedFrom(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.resumes[path]...)
}

// key makes a key of tenant default, as the CLI does; the first one ends open mode.
func (s *server) key(scope model.Scope) string {
	k, err := s.store.CreateAPIKey(context.Background(), model.DefaultTenant, model.CreateAPIKey{Scope: scope, Name: "ui-test"})
	if err != nil {
		s.t.Fatalf("create key: %v", err)
	}
	return k.Key
}

// --- the API client that seeds ---

// seedAgent marks the test's own requests, so that the server tells them
// from the pages'.
const seedAgent = "logbook-ui-test"

type client struct {
	t    *testing.T
	base string
	key  string
}

// do sends a JSON body and fails unless the answer has status want (0: any 2xx).
func (c *client) do(method, path string, body any, want int) []byte {
	c.t.Helper()
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			c.t.Fatal(err)
		}
	}
	return c.raw(method, path, "application/json", b, want)
}

func (c *client) raw(method, path, ctype string, body []byte, want int) []byte {
	c.t.Helper()
	status, out := c.send(method, path, ctype, body)
	if (want == 0 && (status < 200 || status > 299)) || (want != 0 && status != want) {
		c.t.Fatalf("%s %s: got %d, want %d: %s", method, path, status, want, out)
	}
	return out
}

func (c *client) send(method, path, ctype string, body []byte) (int, []byte) {
	c.t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", ctype)
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	req.Header.Set("User-Agent", seedAgent)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read: %v", method, path, err)
	}
	return res.StatusCode, out
}

func (c *client) decode(b []byte, v any) {
	c.t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		c.t.Fatalf("decode %s: %v", b, err)
	}
}

type sessionRow struct {
	ID          string  `json:"id"`
	TotalTokens int64   `json:"total_tokens"`
	TotalCost   float64 `json:"total_cost"`
}

// sessions lists every session, as the API pages them.
func (c *client) sessions() []sessionRow {
	var all []sessionRow
	cursor := ""
	for {
		var page struct {
			Data       []sessionRow `json:"data"`
			HasMore    bool         `json:"has_more"`
			NextCursor string       `json:"next_cursor"`
		}
		c.decode(c.do("GET", "/v1/sessions?limit=200&cursor="+url.QueryEscape(cursor), nil, 200), &page)
		all = append(all, page.Data...)
		if !page.HasMore {
			return all
		}
		cursor = page.NextCursor
	}
}

// waitIndexed waits until conversation search finds word and nothing waits for the index.
func (c *client) waitIndexed(word string) {
	c.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var res struct {
			Data     []json.RawMessage `json:"data"`
			IndexLag int64             `json:"index_lag"`
		}
		c.decode(c.do("GET", "/v1/messages/search?q="+url.QueryEscape(word), nil, 200), &res)
		if len(res.Data) > 0 && res.IndexLag == 0 {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("search index: %q not found after 15s (index_lag %d)", word, res.IndexLag)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type usageAnswer struct {
	Total struct {
		Tokens int64 `json:"tokens"`
	} `json:"total"`
}

// usage asks GET /v1/usage what the usage page asks first: the last 30 days by day.
func (c *client) usage() (int, usageAnswer) {
	now := time.Now().UTC()
	from := now.AddDate(0, 0, -29).Format("2006-01-02") + "T00:00:00Z"
	to := now.AddDate(0, 0, 1).Format("2006-01-02") + "T00:00:00Z"
	status, body := c.send("GET", "/v1/usage?group_by=day&from="+from+"&to="+to, "", nil)
	var u usageAnswer
	if status == http.StatusOK {
		c.decode(body, &u)
	}
	return status, u
}

// --- the browser ---

// chromium finds Debian's chromium, which make test and make test-ui install
// when it is missing; without it the test cannot run.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("LOGBOOK_CHROMIUM"); p != "" {
		return p
	}
	for _, p := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Skip("chromium is not installed (make test-ui installs it with apt-get install chromium); skipping the browser test")
	return ""
}

type browser struct {
	ctx   context.Context
	shots string
}

func newBrowser(t *testing.T, path string) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
		// Nothing but the pages' own requests: no updates, metrics, sync,
		// safe-browsing lists or translation.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("disable-client-side-phishing-detection", true),
		chromedp.Flag("disable-features", "Translate,OptimizationHints,MediaRouter,AutofillServerCommunication"),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	// The first Do starts the browser, bound to bctx, which has no deadline;
	// each step then gets its own.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	dir := os.Getenv("LOGBOOK_UI_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots: %s", dir)
	return &browser{ctx: bctx, shots: dir}
}

// tab is one page, with what it did recorded: every request it made, and
// every console error.
type tab struct {
	t     *testing.T
	ctx   context.Context
	shots string

	mu       sync.Mutex
	requests []string
	problems []string
	keyed    bool            // the key was typed in: a 401 from now on is an error
	allowed  map[string]bool // "status path" of the failures a test provokes
}

// allow expects the browser to log a failed answer of this status to path:
// one the test provokes, for the page to show.
func (p *tab) allow(status int, path string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.allowed == nil {
		p.allowed = map[string]bool{}
	}
	p.allowed[strconv.Itoa(status)+" "+path] = true
}

func (b *browser) tab(t *testing.T, base string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	p := &tab{t: t, ctx: ctx, shots: b.shots}
	if err := chromedp.Listen(ctx, p.listen); err != nil {
		t.Fatal(err)
	}
	return p
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// listen runs in the tab's event loop: it only records.
func (p *tab) listen(ev any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		u, err := url.Parse(ev.Request.URL)
		p.requests = append(p.requests, ev.Request.URL)
		switch {
		case err != nil:
			p.problems = append(p.problems, "unparsable request URL "+ev.Request.URL)
		case u.Scheme == "data" || u.Scheme == "blob":
		case (u.Scheme == "http" || u.Scheme == "https") && loopback(u.Hostname()):
		default:
			p.problems = append(p.problems, "a request left loopback: "+ev.Request.URL)
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			p.problems = append(p.problems, "console."+string(ev.Type)+": "+strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		text := d.Text
		if d.Exception != nil {
			text += " " + d.Exception.Description
		}
		p.problems = append(p.problems, "uncaught: "+text)
	case *log.EventEntryAdded:
		e := ev.Entry
		if e.Level != log.EntryLevelError || p.expectedError(e) {
			return
		}
		p.problems = append(p.problems, fmt.Sprintf("console %s error: %s (%s)", e.Source, e.Text, e.URL))
	}
}

// expectedError names the errors the browser logs by itself for answers the
// page expects: 401 before the key is typed, 404 from a server without the
// usage API, and 422 to a search by meaning where nothing embeds.
func (p *tab) expectedError(e *log.Entry) bool {
	if e.Source != log.EntrySourceNetwork {
		return false
	}
	u, err := url.Parse(e.URL)
	if err != nil {
		return false
	}
	switch {
	case strings.Contains(e.Text, "status of 401") && !p.keyed:
		return true
	case strings.Contains(e.Text, "status of 404") && u.Path == "/v1/usage":
		return true
	case strings.Contains(e.Text, "status of 422") && strings.HasSuffix(u.Path, "/search") && u.Query().Get("mode") != "":
		return true // a search by meaning where nothing embeds the words: the page withdraws it
	}
	for k := range p.allowed {
		status, path, _ := strings.Cut(k, " ")
		if strings.Contains(e.Text, "status of "+status) && u.Path == path {
			return true
		}
	}
	return false
}

func (p *tab) keyEntered() {
	p.mu.Lock()
	p.keyed = true
	p.mu.Unlock()
}

// check fails the test on whatever the tab recorded that it must not do.
func (p *tab) check() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pr := range p.problems {
		p.t.Error(pr)
	}
	if len(p.requests) == 0 {
		p.t.Error("no request was recorded: is the network listener on?")
	}
	p.problems = nil
}

func (p *tab) noKeyInURLs(key string) {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.requests {
		if strings.Contains(r, key) {
			p.t.Errorf("the key is in a URL: %s", r)
		}
	}
	p.t.Logf("%d requests, all to loopback", len(p.requests))
}

const stepTimeout = 15 * time.Second

func (p *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.fail("step failed: %v", err)
	}
}

// click clicks the first element sel matches, as a person would, and tries
// again when a live update replaced the element between finding and clicking.
func (p *tab) click(sel string) {
	p.t.Helper()
	var err error
	for range 3 {
		ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
		err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel)))
		cancel()
		if err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.fail("click %s: %v", sel, err)
}

func (p *tab) eval(expr string) string {
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	wrapped := `(() => { try { return String(` + expr + `); } catch (e) { return "(threw " + e + ")"; } })()`
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](wrapped))
	if err != nil {
		return "(evaluate: " + err.Error() + ")"
	}
	return s
}

// waitEq waits until expr, a JavaScript expression, is want as a string.
func (p *tab) waitEq(what, expr, want string) {
	p.t.Helper()
	deadline := time.Now().Add(stepTimeout)
	var got string
	for {
		if got = p.eval(expr); got == want {
			return
		}
		if time.Now().After(deadline) {
			p.fail("%s: got %q, want %q", what, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fail saves a screenshot and what the tab recorded, then stops the test.
func (p *tab) fail(format string, args ...any) {
	p.t.Helper()
	p.shot("failure")
	p.mu.Lock()
	for _, pr := range p.problems {
		p.t.Log("recorded: " + pr)
	}
	p.mu.Unlock()
	p.t.Logf("page: %s", p.eval(`location.href + "\n" + document.getElementById("view")?.innerText.slice(0, 2000)`))
	p.t.Fatalf(format, args...)
}

func (p *tab) shot(name string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil { // a page too tall for one image: its viewport, then
		buf, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
	}
	if err != nil {
		p.t.Logf("screenshot %s: %v", name, err)
		return
	}
	path := filepath.Join(p.shots, name+".png")
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		p.t.Errorf("save screenshot: %v", err)
	}
}

// checkModules runs the dashboard's own modules in the page: the
// text/event-stream parser on chunks cut anywhere (a CRLF split in two, a
// BOM, comments, multi-line data, id-only blocks, an unfinished event), and
// the line diff.
func (p *tab) checkModules() {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(async () => {
		const { EventStreamParser } = await import("/ui/js/eventstream.js");
		const { lineDiff } = await import("/ui/js/diff.js");
		const text = "\ufeffretry: 1000\nid: 7\n: live\n\nid: 8\nevent: message.appended\ndata: {\"a\":\r\ndata: 1}\r\n\r\n: heartbeat\n\ndata:x\rdata\r\rid: 9\nevent: e\ndata: last\n\nid: 10\ndata: unfinished";
		const out = [];
		for (const step of [1, 2, 3, 7, text.length]) {
			const evs = [], ids = [], retries = [];
			const p = new EventStreamParser({ event: (e) => evs.push(e), id: (i) => ids.push(i), retry: (r) => retries.push(r) });
			for (let i = 0; i < text.length; i += step) p.push(text.slice(i, i + step));
			p.end();
			out.push(JSON.stringify({ evs, ids, retries }));
		}
		const diffs = [["a\nb\nc", "a\nc\nd"], ["", "x"], ["same", "same"]].map(([a, b]) => lineDiff(a, b).map((l) => l.op + l.text).join("|"));
		return JSON.stringify({ parsed: [...new Set(out)], diffs });
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		p.fail("modules: %v", err)
	}
	want := `{"parsed":["{\"evs\":[{\"id\":\"8\",\"event\":\"message.appended\",\"data\":\"{\\\"a\\\":\\n1}\"},{\"id\":\"8\",\"event\":\"message\",\"data\":\"x\\n\"},{\"id\":\"9\",\"event\":\"e\",\"data\":\"last\"}],\"ids\":[\"7\",\"8\",\"9\"],\"retries\":[1000]}"],"diffs":[" a|-b| c|+d","+x"," same"]}`
	if got != want {
		p.t.Errorf("modules in the page:\n got %s\nwant %s", got, want)
	}
	p.checkMarkdown()
}

// checkMarkdown renders hostile and ordinary Markdown with the page's own
// renderer: whatever the input, only the renderer's few elements and
// attributes come out, links only to http(s) with rel="noopener noreferrer";
// and ordinary Markdown comes out as it means.
func (p *tab) checkMarkdown() {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(async () => {
		const { markdown } = await import("/ui/js/markdown.js");
		const hostile = [
			"<script>window.__xss=1</script>", "<img src=x onerror=window.__xss=1>", "<svg/onload=window.__xss=1>",
			"[x](javascript:window.__xss=1)", "[x](JAVASCRIPT:window.__xss=1)", "[x]( javascript:window.__xss=1)", "[x](java\tscript:window.__xss=1)",
			"[x](vbscript:x)", "[x](data:text/html;base64,PHNjcmlwdD4=)", "[x](//evil.example/a)", "[x](/relative)", "[x](#frag)",
			"<javascript:window.__xss=1>", "<a href=\"https://x.example\" onclick=\"window.__xss=1\">y</a>",
			"`+"```"+`\n</code></pre><script>window.__xss=1</script>\n`+"```"+`", "`+"`"+`<iframe src=x>`+"`"+`",
			"**<svg onload=window.__xss=1>**", "[<img src=x onerror=window.__xss=1>](https://ok.example)",
			"[ok](https://ok.example/\"onmouseover=\"window.__xss=1)", "https://ok.example/<script>window.__xss=1</script>",
			"> <style>*{display:none}</style>", "- <object data=x>", "# <h1>x</h1>", "1. <form action=x><button>go</button></form>",
			"*".repeat(3000) + "a", "_".repeat(3000), "[".repeat(2000) + "x", "**a".repeat(1500), "<".repeat(2000), "http://".repeat(500),
		];
		const allowedTags = new Set(["DIV", "P", "BR", "STRONG", "EM", "DEL", "CODE", "PRE", "UL", "OL", "LI", "BLOCKQUOTE", "HR", "A", "SPAN"]);
		const allowedAttrs = new Set(["class", "href", "rel", "target", "start", "data-lang"]);
		const bad = [];
		for (const text of hostile) {
			const el = markdown(text);
			for (const e of [el, ...el.querySelectorAll("*")]) {
				if (!allowedTags.has(e.tagName)) bad.push(text.slice(0, 40) + ": <" + e.tagName + ">");
				for (const a of e.attributes) if (!allowedAttrs.has(a.name)) bad.push(text.slice(0, 40) + ": " + a.name);
				if (e.tagName === "A" && (!/^https?:\/\//.test(e.getAttribute("href")) || e.rel !== "noopener noreferrer")) bad.push(text.slice(0, 40) + ": href " + e.getAttribute("href"));
			}
		}
		const cases = [
			["a **b** *c* ~~d~~ `+"`e`"+`", "<p>a <strong>b</strong> <em>c</em> <del>d</del> <code>e</code></p>"],
			["snake_case_name and a.__dunder", "<p>snake_case_name and a.__dunder</p>"],
			["line one\nline two\n\nnext", "<p>line one<br>line two</p><p>next</p>"],
			["1. a\n2. b\n\n- c\n  - d", "<ol><li><p>a</p></li><li><p>b</p></li></ol><ul><li><p>c</p><ul><li><p>d</p></li></ul></li></ul>"],
			["[t](https://e.example/a?b=1)", '<p><a href="https://e.example/a?b=1" rel="noopener noreferrer" target="_blank" class="md-link">t</a></p>'],
			["> quoted\n\n---\n## Title", "<blockquote><p>quoted</p></blockquote><hr><p class=\"md-h md-h2\"><strong>Title</strong></p>"],
			["`+"```go"+`\nx := 1\n`+"```"+`", '<pre class="md-code" data-lang="go"><code>x := 1</code></pre>'],
		];
		for (const [text, want] of cases) {
			const got = markdown(text).innerHTML;
			if (got !== want) bad.push("render " + JSON.stringify(text) + ": got " + got);
		}
		return JSON.stringify({ bad, ran: String(window.__xss) });
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		p.fail("markdown: %v", err)
	}
	if want := `{"bad":[],"ran":"undefined"}`; got != want {
		p.t.Errorf("markdown in the page:\n got %s\nwant %s", got, want)
	}
}
