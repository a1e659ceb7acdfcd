package client

import (
	"strings"

	"github.com/logbook/logbook/client/api"
)

// Text is message content made of one string, for MessageAppend.Content:
//
//	api.MessageAppend{Role: api.MessageRoleUser, Content: client.Text("Hi")}
func Text(s string) *api.Content {
	var c api.Content
	_ = c.FromContentText(s) // marshalling a string cannot fail
	return &c
}

// TextOf is the text of content: the string, or the text of its text and
// refusal parts joined by a line break (images, files and reasoning left out).
func TextOf(c api.Content) string {
	if s, err := c.AsContentText(); err == nil {
		return s
	}
	parts, err := c.AsContentParts()
	if err != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if (p.Type == api.PartTypeText || p.Type == api.PartTypeRefusal) && p.Text != nil {
			texts = append(texts, *p.Text)
		}
	}
	return strings.Join(texts, "\n")
}
