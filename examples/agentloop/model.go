package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"

	"github.com/logbook/logbook/client"
	"github.com/logbook/logbook/client/api"
)

// userTurns is what the user says, one turn each.
var userTurns = []string{
	"Hi!",
	"Can I get a refund for order 1042?",
}

// chatModel answers a conversation with the assistant's next message, as an
// LLM API call does.
type chatModel interface {
	Next(history []api.Message) api.MessageAppend
}

// scriptedModel stands in for an LLM: it reads the history and answers as a
// tool-using model would, deterministically and without a network.
type scriptedModel struct{}

var orderNumber = regexp.MustCompile(`order (\d+)`)

// Next is the assistant's next message after history (never empty).
func (scriptedModel) Next(history []api.Message) api.MessageAppend {
	last := history[len(history)-1]
	reply := func(text string) api.MessageAppend {
		return api.MessageAppend{Role: api.MessageRoleAssistant, Content: client.Text(text), Model: client.Ptr("scripted-1"),
			Tokens: client.Ptr[int64](int64(len(text)/4 + 1))}
	}
	callLookup := func(order string) api.MessageAppend {
		m := reply("")
		// A call id unique in the session: the seq this message will get.
		m.ToolCalls = []api.ToolCallInput{{ID: "call_" + strconv.FormatInt(last.Seq+1, 10), Name: "lookup_order",
			Arguments: fmt.Sprintf(`{"order_id": %s}`, order)}}
		return m
	}
	switch {
	case last.Role == api.MessageRoleUser:
		if m := orderNumber.FindStringSubmatch(client.TextOf(last.Content)); m != nil {
			return callLookup(m[1])
		}
		return reply("Hello! How can I help?")
	case last.Role == api.MessageRoleTool && last.IsError:
		// The call failed (or was interrupted by a crash): call again.
		var args struct {
			OrderID json.Number `json:"order_id"`
		}
		_ = json.Unmarshal([]byte(callOf(history, *last.ToolCallID).Arguments), &args)
		return callLookup(args.OrderID.String())
	case last.Role == api.MessageRoleTool:
		var order struct {
			OrderID    int    `json:"order_id"`
			Status     string `json:"status"`
			Refundable bool   `json:"refundable"`
		}
		_ = json.Unmarshal([]byte(client.TextOf(last.Content)), &order)
		if order.Refundable {
			return reply(fmt.Sprintf("Order %d is %s and refundable: I have started your refund.", order.OrderID, order.Status))
		}
		return reply(fmt.Sprintf("Order %d is %s; it cannot be refunded.", order.OrderID, order.Status))
	default:
		return reply("Is there anything else?")
	}
}

// callOf finds the tool call id among the history's assistant messages.
func callOf(history []api.Message, id string) api.ToolCall {
	for _, m := range history {
		for _, c := range m.ToolCalls {
			if c.ID == id {
				return c
			}
		}
	}
	return api.ToolCall{Arguments: "{}"}
}

// tools are the functions the model may call, by name: JSON arguments in,
// the result's text out.
var tools = map[string]func(args string) (string, error){
	"lookup_order": func(args string) (string, error) {
		var in struct {
			OrderID int `json:"order_id"`
		}
		if err := json.Unmarshal([]byte(args), &in); err != nil {
			return "", fmt.Errorf("lookup_order: arguments: %w", err)
		}
		out, err := json.Marshal(map[string]any{"order_id": in.OrderID, "status": "delivered", "refundable": in.OrderID%2 == 0})
		return string(out), err
	},
}
