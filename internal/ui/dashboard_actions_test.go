package ui_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/logbook/logbook/internal/model"
)

// TestDashboardActions acts through the dashboard in Chromium, as a person
// with a write key would: each action asks first in a dialog that names what
// it acts on (one is cancelled, and changes nothing), sends an
// Idempotency-Key, and the page shows the outcome; a refused one shows its
// problem; a read key sees no action at all.
func TestDashboardActions(t *testing.T) {
	chrome := chromium(t)
	srv := startServer(t, false)
	writeKey := srv.key(model.ScopeWrite)
	readKey := srv.key(model.ScopeRead)
	c := &client{t: t, base: srv.url, key: writeKey}
	seedActions(c)

	b := newBrowser(t, chrome)
	p := b.tab(t, srv.url)
	p.useKey(srv.url, writeKey)
	p.do(chromedp.Navigate(srv.url + "/ui/#/sessions/act-1"))
	p.waitEq("the key's scope", `document.getElementById("scope").textContent`, "write key")
	p.waitEq("messages", `[...document.querySelectorAll("#conversation [data-seq]")].map(e => e.dataset.seq).join(",")`, "1,2,3")
	p.waitEq("the session's actions", `[...document.querySelectorAll("#session-actions .act")].map(b => b.textContent).join(",")`, "Close,Archive,Purge…")

	// Asked first; cancelled, nothing happens.
	p.click("#session-actions .act-close")
	p.waitEq("the dialog names the session", `document.getElementById("action-title").textContent + ": " + document.getElementById("action-what").textContent`,
		"Close session: Close “Order 7” (act-1): its status becomes completed and it refuses new messages until it is reopened. Nothing is deleted.")
	p.shot("20-confirm-close")
	p.click("#action-cancel")
	p.waitEq("cancelled", `String(document.getElementById("action-dialog") === null) + " " + document.getElementById("session-status").textContent`, "true active")

	// The resume report's repair.
	p.waitEq("a repair to apply", `document.getElementById("resume-repair")?.textContent`, "Apply 1 repair…")
	p.click("#resume-repair")
	p.waitEq("what it will do", `String(document.getElementById("action-what").textContent.includes("append_interrupted_result at #2"))`, "true")
	p.click("#action-confirm")
	p.waitEq("repaired", `document.getElementById("resume-status").textContent + " " + document.querySelector('details.tool-call[data-call-id="call_a"] .state').textContent`,
		"ready to resume error #4")

	// Fork from a message: the fork is shown, its inherited message marked.
	p.click("#m-1 .act-fork")
	p.waitEq("the fork dialog", `document.getElementById("action-what").textContent`,
		"Make a new session that shares “Order 7” (act-1)’s first 1 message (through #1) and continues on its own. The session itself does not change.")
	p.do(chromedp.SetValue(chromedp.CSS("#action-field-title"), "Order 7, again"))
	p.click("#action-confirm")
	p.waitEq("the fork", `document.getElementById("session-title")?.textContent + " " + document.getElementById("fork-marker")?.dataset.through + " " + document.getElementById("conversation-count").textContent`,
		"Order 7, again 1 (1)")
	fork := strings.TrimPrefix(p.eval(`location.hash`), "#/sessions/")
	p.do(chromedp.Evaluate[chromedp.Void](`history.back()`))
	p.waitEq("back to the session", `document.getElementById("session-title")?.textContent + " " + document.querySelectorAll("#conversation [data-seq]").length`, "Order 7 4")

	// Rewind to a message, fenced at the last seq the page saw.
	p.click("#m-1 .act-rewind")
	p.waitEq("the rewind dialog", `document.querySelector("#action-what p").textContent.split(":")[1]`, " 3 messages (#2–#4) leave its history, and so do the checkpoints and compactions that reach past it; the next message gets #2.")
	p.click("#action-confirm")
	p.waitEq("rewound", `[...document.querySelectorAll("#conversation [data-seq]")].map(e => e.dataset.seq).join(",") + " " + document.getElementById("session-messages").textContent`, "1 1")

	// Close; then a refused rewind shows the server's problem in the dialog.
	p.click("#session-actions .act-close")
	p.click("#action-confirm")
	p.waitEq("closed", `document.getElementById("session-status").textContent + " " + [...document.querySelectorAll("#session-actions .act")].map(b => b.textContent).join(",")`,
		"completed Reopen,Archive,Purge…")
	p.allow(http.StatusConflict, "/v1/sessions/act-1/rewind")
	p.click("#m-1 .act-rewind")
	p.click("#action-confirm")
	p.waitEq("the problem, whole", `(() => { const e = document.querySelector("#action-dialog .problem"); return e.dataset.code + " | " + e.querySelector(".problem-title").textContent + " | " +
		e.querySelector(".problem-code").textContent + " | " + (e.querySelector(".problem-detail")?.textContent.length > 0) + " | " + document.getElementById("action-confirm").textContent; })()`,
		"session_closed | 409 Conflict | session_closed | true | Try again")
	p.shot("21-problem")
	p.click("#action-cancel")

	// Reopen, archive (terminal), purge.
	p.click("#session-actions .act-reopen")
	p.click("#action-confirm")
	p.waitEq("reopened", `document.getElementById("session-status").textContent`, "active")
	p.click("#session-actions .act-archive")
	p.click("#action-confirm")
	p.waitEq("archived", `document.getElementById("session-status").textContent + " " + [...document.querySelectorAll("#session-actions .act")].map(b => b.textContent).join(",")`,
		"archived Purge…")
	p.click("#session-actions .act-purge")
	p.waitEq("the purge dialog says it is for good", `document.getElementById("action-what").textContent.startsWith("Erase “Order 7” (act-1) for good: its 1 messages, its checkpoints") + " " + document.getElementById("action-confirm").className`,
		"true danger")
	p.click("#action-confirm")
	p.waitEq("purged", `location.hash + " " + document.getElementById("purged-id")?.textContent`, "#/sessions?purged=act-1 act-1")
	if status, _ := c.send("GET", "/v1/sessions/act-1", "", nil); status != http.StatusNotFound {
		t.Errorf("the purged session answers %d, want 404", status)
	}

	// A block, edited only at the version shown; a change meanwhile is 412.
	p.do(chromedp.Evaluate[chromedp.Void](`location.hash = "#/agents/act-bot"`))
	p.click(`.block-card[data-label="human"] .act-edit`)
	p.do(chromedp.SetValue(chromedp.CSS("#action-field-value"), "Name: Bo\nLikes tea"))
	p.click("#action-confirm")
	p.waitEq("edited", `(() => { const c = document.querySelector('.block-card[data-label="human"]'); return c.dataset.version + " " + c.querySelector(".block-value").textContent; })()`,
		"2 Name: Bo\nLikes tea")
	p.click(`.block-card[data-label="human"] .act-edit`)
	p.waitEq("the dialog holds the text shown", `document.getElementById("action-field-value").value`, "Name: Bo\nLikes tea")
	c.do("PUT", "/v1/agents/act-bot/blocks/human", map[string]any{"value": "Name: Bo (changed elsewhere)"}, http.StatusOK)
	p.allow(http.StatusPreconditionFailed, "/v1/agents/act-bot/blocks/human")
	p.do(chromedp.SetValue(chromedp.CSS("#action-field-value"), "Name: Bo\nLikes coffee"))
	p.click("#action-confirm")
	p.waitEq("changed meanwhile", `document.querySelector("#action-dialog .problem")?.dataset.code + " " + document.getElementById("block-stale")?.querySelector("b").textContent +
		" " + document.getElementById("action-confirm").hidden`, "precondition_failed Changed meanwhile: reload. true")
	p.shot("22-block-conflict")
	p.click("#block-reload")
	p.waitEq("reloaded", `(() => { const c = document.querySelector('.block-card[data-label="human"]'); return (document.getElementById("action-dialog") === null) + " " + c.dataset.version + " " + c.querySelector(".block-value").textContent; })()`,
		"true 3 Name: Bo (changed elsewhere)")

	// Every write the page sent carried an Idempotency-Key, the block's its If-Match.
	writes := srv.pageWrites()
	var seen []string
	for _, w := range writes {
		seen = append(seen, w.method+" "+w.path)
		if !strings.HasPrefix(w.idempotencyKey, "ui-") || len(w.idempotencyKey) != 35 {
			t.Errorf("%s %s: Idempotency-Key %q", w.method, w.path, w.idempotencyKey)
		}
	}
	want := []string{"POST /v1/sessions/act-1/repair", "POST /v1/sessions/act-1/fork", "POST /v1/sessions/act-1/rewind", "DELETE /v1/sessions/act-1",
		"POST /v1/sessions/act-1/rewind", "PATCH /v1/sessions/act-1", "PATCH /v1/sessions/act-1", "DELETE /v1/sessions/act-1",
		"PUT /v1/agents/act-bot/blocks/human", "PUT /v1/agents/act-bot/blocks/human"}
	if got := strings.Join(seen, ", "); got != strings.Join(want, ", ") {
		t.Errorf("the page's writes:\n got %s\nwant %s", got, strings.Join(want, ", "))
	}
	if len(writes) == len(want) {
		if writes[7].query != "purge=true" || writes[8].ifMatch != `"1"` || writes[9].ifMatch != `"2"` {
			t.Errorf("purge %q, If-Match %q and %q", writes[7].query, writes[8].ifMatch, writes[9].ifMatch)
		}
	}
	p.check()

	// A read key sees what there is, and no action.
	q := b.tab(t, srv.url)
	q.useKey(srv.url, readKey)
	q.allow(http.StatusNotFound, "/v1/sessions/act-1") // the fork tree looks for the purged parent
	q.do(chromedp.Navigate(srv.url + "/ui/#/sessions/" + fork))
	q.waitEq("the fork, read", `document.getElementById("scope").textContent + " " + document.getElementById("session-title")?.textContent + " " + document.getElementById("conversation-count")?.textContent`,
		"read key Order 7, again (1)")
	q.waitEq("its resume report", `document.getElementById("resume-status")?.textContent`, "ready to resume")
	q.waitEq("no action", `document.querySelectorAll(".act, #resume-repair, #session-actions").length`, "0")
	q.do(chromedp.Evaluate[chromedp.Void](`location.hash = "#/agents/act-bot"`))
	q.waitEq("the block, read", `document.querySelector('.block-card[data-label="human"] .block-value')?.textContent`, "Name: Bo (changed elsewhere)")
	q.waitEq("no edit", `document.querySelectorAll(".act").length`, "0")
	q.shot("23-read-key")
	q.check()
}

// seedActions writes a session with an unanswered tool call (which resume
// reports, with an automatic repair) and an agent with a block.
func seedActions(c *client) {
	c.do("POST", "/v1/agents", map[string]any{"id": "act-bot", "name": "Act bot"}, 201)
	c.do("PUT", "/v1/agents/act-bot/blocks/human", map[string]any{"value": "Name: Bo"}, 201)
	c.do("POST", "/v1/sessions", map[string]any{"id": "act-1", "agent_id": "act-bot", "title": "Order 7"}, 201)
	c.do("POST", "/v1/sessions/act-1/messages/batch", map[string]any{"messages": []map[string]any{
		{"role": "user", "content": "Where is order 7?"},
		{"role": "assistant", "content": "", "tool_calls": []map[string]any{{"id": "call_a", "name": "track", "arguments": `{"order": 7}`}}},
		{"role": "user", "content": "Hello?"},
	}}, 201)
	c.do("PUT", "/v1/sessions/act-1/checkpoint", map[string]any{"iteration": 1, "state": map[string]any{}}, 201)
}

// useKey puts the key in the tab's sessionStorage for the server's origin,
// as the key dialog would.
func (p *tab) useKey(base, key string) {
	p.t.Helper()
	k, _ := json.Marshal(key)
	p.allow(http.StatusNotFound, "/favicon.ico") // the browser asks for one beside a file shown as a page
	p.do(chromedp.Navigate(base+"/ui/favicon.svg"),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`sessionStorage.setItem("logbook.key", %s)`, k)))
	p.keyEntered()
}
