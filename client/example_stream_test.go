package client_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/logbook/logbook/client"
	"github.com/logbook/logbook/client/api"
)

// The examples run against the tests' server ($LOGBOOK_URL, set by
// TestMain), and client/README.md shows their bodies as they are here
// (TestReadmeShowsTheStreamExamples).

// A turn's messages on one request, and what became of each: the tool
// result names no tool call, so the server refuses it, and stores nothing
// after it.
func ExampleClient_AppendMany() {
	ctx := context.Background()
	c, err := client.New(os.Getenv("LOGBOOK_URL"))
	if err != nil {
		log.Fatal(err)
	}
	s, err := c.CreateSession(ctx, api.SessionCreate{})
	if err != nil {
		log.Fatal(err)
	}
	results, err := c.AppendMany(ctx, s.ID, []api.MessageInput{
		{Role: api.MessageRoleUser, Content: client.Text("Where is my refund?")},
		{Role: api.MessageRoleAssistant, Content: client.Text(""),
			ToolCalls: []api.ToolCallInput{{ID: "call_1", Name: "lookup_order", Arguments: `{"order_id": 1042}`}}},
		{Role: api.MessageRoleTool, Content: client.Text(`{"refunded": true}`)}, // no tool_call_id
		{Role: api.MessageRoleAssistant, Content: client.Text("It was refunded yesterday.")},
	}, nil)
	for _, r := range results {
		if r.Err != nil {
			fmt.Println(r.Line, "not stored:", client.Code(r.Err))
			continue
		}
		fmt.Println(r.Line, "stored as seq", r.Message.Seq)
	}
	fmt.Println("error:", client.Code(err))
	// Output:
	// 1 stored as seq 1
	// 2 stored as seq 2
	// 3 not stored: validation_failed
	// 4 not stored: stream_stopped
	// error: validation_failed
}

// A writer fed as the messages come (a bulk load, a turn as it happens),
// whose results are read as they commit. KeyPrefix names the messages, so
// that sending the same ones again, even from another process, stores each
// once.
func ExampleClient_OpenStream() {
	ctx := context.Background()
	c, err := client.New(os.Getenv("LOGBOOK_URL"))
	if err != nil {
		log.Fatal(err)
	}
	s, err := c.CreateSession(ctx, api.SessionCreate{})
	if err != nil {
		log.Fatal(err)
	}
	w, err := c.OpenStream(ctx, s.ID, &client.StreamOptions{KeyPrefix: "import-42:"})
	if err != nil {
		log.Fatal(err)
	}
	results := w.Results() // before the first Send, to see every result
	read := make(chan struct{})
	go func() {
		defer close(read)
		for r := range results {
			if r.Err != nil {
				fmt.Println(r.Line, "not stored:", r.Err)
				continue
			}
			fmt.Println(r.Line, r.Key, "is seq", r.Message.Seq)
		}
	}()
	for _, m := range []api.MessageInput{
		{Role: api.MessageRoleUser, Content: client.Text("Where is my refund?")},
		{Role: api.MessageRoleAssistant, Content: client.Text("It was refunded yesterday.")},
	} {
		if err := w.Send(m); err != nil {
			break // the stream stopped: Close says why
		}
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	<-read
	// Output:
	// 1 import-42:1 is seq 1
	// 2 import-42:2 is seq 2
}
