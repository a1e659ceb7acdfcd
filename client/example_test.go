package client_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/logbook/logbook/client"
	"github.com/logbook/logbook/client/api"
)

// A turn of an agent loop: the user's question, the model's tool call, the
// tool's result and the answer, all or nothing; a checkpoint of the loop's
// state; and what a new worker reads to take over.
func ExampleClient() {
	ctx := context.Background()
	c, err := client.New(os.Getenv("LOGBOOK_URL"), client.WithAPIKey(os.Getenv("LOGBOOK_API_KEY")))
	if err != nil {
		log.Fatal(err)
	}
	s, err := c.CreateSession(ctx, api.SessionCreate{Title: client.Ptr("Refund for order 1042")})
	if err != nil {
		log.Fatal(err)
	}
	call, err := client.ToolCall("call_1", "lookup_order", map[string]any{"order_id": 1042})
	if err != nil {
		log.Fatal(err)
	}
	output, err := client.ToolOutput(map[string]any{"status": "refunded"})
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.AppendMessages(ctx, s.ID, api.MessageBatch{Messages: []api.MessageInput{
		{Role: api.MessageRoleUser, Content: client.Text("Was order 1042 refunded?")},
		{Role: api.MessageRoleAssistant, ToolCalls: []api.ToolCallInput{call}},
		{Role: api.MessageRoleTool, ToolCallID: client.Ptr("call_1"), Content: output},
		{Role: api.MessageRoleAssistant, Content: client.Text("Yes, yesterday.")},
	}})
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.PutCheckpoint(ctx, s.ID, api.CheckpointPut{Iteration: 1,
		State: api.CheckpointState{AdditionalProperties: map[string]any{"step": "answered"}}})
	if err != nil {
		log.Fatal(err)
	}
	r, err := c.Resume(ctx, s.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("checkpoint", r.Checkpoint.Iteration, "after seq", r.Checkpoint.LastSeq, "of", r.Session.LastSeq)
	for m, err := range c.ListMessages(ctx, s.ID, nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%d %s %q\n", m.Seq, m.Role, client.TextOf(m.Content))
	}
	// Output:
	// checkpoint 1 after seq 4 of 4
	// 1 user "Was order 1042 refunded?"
	// 2 assistant ""
	// 3 tool ""
	// 4 assistant "Yes, yesterday."
}

// A file uploaded once and named by an image part; a small one can travel
// in the message itself as a data: URL. The bytes come back as they went.
func ExampleClient_UploadFile() {
	ctx := context.Background()
	c, err := client.New(os.Getenv("LOGBOOK_URL"))
	if err != nil {
		log.Fatal(err)
	}
	png := []byte("\x89PNG\r\n\x1a\n a receipt")
	f, err := c.UploadFile(ctx, bytes.NewReader(png), "image/png")
	if err != nil {
		log.Fatal(err)
	}
	s, err := c.CreateSession(ctx, api.SessionCreate{})
	if err != nil {
		log.Fatal(err)
	}
	m, err := c.AppendMessage(ctx, s.ID, api.MessageAppend{Role: api.MessageRoleUser, Content: client.Parts(
		client.TextPart("What does this receipt say?"),
		client.ImageFile(f.ID),
		client.ImageURL(client.DataURL("image/png", png)),
	)})
	if err != nil {
		log.Fatal(err)
	}
	parts, err := m.Content.AsContentParts()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(parts), "parts:", parts[0].Type, parts[1].Type, parts[2].Type)
	body, mediaType, err := c.DownloadFile(ctx, *parts[1].FileID)
	if err != nil {
		log.Fatal(err)
	}
	defer body.Close()
	got, err := io.ReadAll(body)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(mediaType, bytes.Equal(got, png))
	// Output:
	// 3 parts: text image image
	// image/png true
}

// An agent's memory: a core block the model sees on every turn, edited as
// the model's memory tools edit it, with every version kept; and archival
// passages, searched by words.
func ExampleClient_RunTool() {
	ctx := context.Background()
	c, err := client.New(os.Getenv("LOGBOOK_URL"))
	if err != nil {
		log.Fatal(err)
	}
	a, err := c.CreateAgent(ctx, api.AgentCreate{Name: "support-bot"})
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.PutBlock(ctx, a.ID, "human", api.BlockPut{Value: client.Ptr("Name: Ada.")}, nil)
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.AppendBlock(ctx, a.ID, "human", api.BlockAppend{Content: "Prefers email."})
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.RunTool(ctx, a.ID, "core_memory_replace", `{"label": "human", "old_content": "email", "new_content": "phone"}`)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("tool:", res.Result, res.IsError)
	for b, err := range c.GetBlockHistory(ctx, a.ID, "human", nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("v%d %q\n", b.Version, b.Value)
	}
	_, err = c.InsertPassage(ctx, a.ID, api.PassageCreate{Content: "Order 1042 was refunded on 3 March.", Tags: []string{"orders"}})
	if err != nil {
		log.Fatal(err)
	}
	hits, err := c.SearchArchival(ctx, a.ID, api.PassageSearchRequest{Q: client.Ptr("refunded")})
	if err != nil {
		log.Fatal(err)
	}
	for _, h := range hits.Data {
		fmt.Println("found:", h.Content)
	}
	// Output:
	// tool: None false
	// v3 "Name: Ada.\nPrefers phone."
	// v2 "Name: Ada.\nPrefers email."
	// v1 "Name: Ada."
	// found: Order 1042 was refunded on 3 March.
}

// A session exported as NDJSON and imported again under new ids: the
// export's bytes go back as they came (its last line checks them).
func ExampleClient_ExportSession() {
	ctx := context.Background()
	c, err := client.New(os.Getenv("LOGBOOK_URL"))
	if err != nil {
		log.Fatal(err)
	}
	s, err := c.CreateSession(ctx, api.SessionCreate{Title: client.Ptr("to copy")})
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.AppendMessage(ctx, s.ID, api.MessageAppend{Role: api.MessageRoleUser, Content: client.Text("Hello")})
	if err != nil {
		log.Fatal(err)
	}
	export, err := c.ExportSession(ctx, s.ID)
	if err != nil {
		log.Fatal(err)
	}
	data, err := io.ReadAll(export)
	export.Close()
	if err != nil {
		log.Fatal(err)
	}
	copied, err := c.ImportSession(ctx, bytes.NewReader(data), &api.ImportSessionParams{AsNew: client.Ptr(true)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(copied.ID != s.ID, *copied.Title, copied.MessageCount)
	// Output:
	// true to copy 1
}
