package model

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// The hand-written checks of NewMessage and AppendBatch answer what their
// validate tags answer, field for field and word for word, on random messages
// built to break every rule.
func TestMessageChecksMatchTheTags(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	made := map[int]*string{}
	str := func(n int) *string { // made once: some are a megabyte
		if s, ok := made[n]; ok {
			return s
		}
		s := strings.Repeat("é", n)
		made[n] = &s
		return &s
	}
	pick := func(opts ...*string) *string { return opts[rng.IntN(len(opts))] }
	roles := []Role{"", RoleUser, RoleAssistant, RoleSystem, RoleTool, RoleDeveloper, "robot"}
	for i := 0; i < 3000; i++ {
		m := NewMessage{
			Role:           roles[rng.IntN(len(roles))],
			Content:        TextContent(*str([]int{0, 5}[rng.IntN(2)])),
			Name:           pick(nil, str(0), str(256), str(257)),
			ToolCallID:     pick(nil, str(0), str(1), str(257)),
			AgentID:        pick(nil, str(0), str(128), str(129)),
			Model:          pick(nil, str(256), str(257)),
			Tokens:         []int64{-1, 0, 7, MaxMessageTokens, MaxMessageTokens + 1}[rng.IntN(5)],
			Cost:           []float64{-0.5, 0, 1.5, MaxMessageCost, MaxMessageCost + 1}[rng.IntN(5)],
			IdempotencyKey: *pick(str(0), str(255), str(256)),
		}
		m.IsError = rng.IntN(3) == 0
		switch rng.IntN(4) {
		case 1:
			m.ToolCalls = []ToolCall{{ID: "c", Name: "f", Arguments: "{}"}}
		case 2:
			m.ToolCalls = []ToolCall{{ID: "", Name: *str(257), Arguments: "{"}, {ID: *str(257), Name: "", Arguments: `[1]`}}
		case 3:
			m.ToolCalls = make([]ToolCall, 129)
		}
		got := fieldsOf(m.Validate())
		want := fieldsOf(validationOrNil(structValidator().Struct(&m)))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("message %.300v:\nhand-written %v\ntags         %v", m, got, want)
		}
	}
	for _, b := range []AppendBatch{
		{},
		{Messages: []NewMessage{}},
		{Messages: make([]NewMessage, 1001)},
		{Messages: []NewMessage{{Role: RoleUser}, {Role: "x", Tokens: -1}, {Role: RoleTool}}},
	} {
		got := fieldsOf(b.Validate())
		want := fieldsOf(validationOrNil(structValidator().Struct(&b)))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("batch of %d:\nhand-written %v\ntags         %v", len(b.Messages), got, want)
		}
	}
}

func validationOrNil(err error) error {
	if err == nil {
		return nil
	}
	return validationError(err)
}

func fieldsOf(err error) []FieldError {
	var e *Error
	if !errors.As(err, &e) {
		return nil
	}
	return e.Fields
}
