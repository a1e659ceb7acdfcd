package client

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/logbook/logbook/client/api"
)

// Message content is a string or a list of parts (text, images, files,
// reasoning, a refusal, an application's data, a tool's JSON result). These
// build them:
//
//	api.MessageAppend{Role: api.MessageRoleUser, Content: client.Parts(
//		client.TextPart("What does this receipt say?"),
//		client.ImageFile(f.ID), // f from c.UploadPath(ctx, "receipt.png")
//	)}

// Text is message content made of one string, for MessageAppend.Content:
//
//	api.MessageAppend{Role: api.MessageRoleUser, Content: client.Text("Hi")}
func Text(s string) *api.Content {
	var c api.Content
	_ = c.FromContentText(s) // marshalling a string cannot fail
	return &c
}

// Parts is message content made of parts.
func Parts(parts ...api.Part) *api.Content {
	var c api.Content
	_ = c.FromContentParts(parts) // parts are plain structs: marshalling them cannot fail
	return &c
}

// TextPart is a text part.
func TextPart(text string) api.Part {
	return api.Part{Type: api.PartTypeText, Text: &text}
}

// ImageURL is an image part that points at an http(s) URL, or holds its
// bytes in a data: URL ([DataURL]).
func ImageURL(url string) api.Part {
	return api.Part{Type: api.PartTypeImage, URL: &url}
}

// ImageFile is an image part of an uploaded file ([Client.UploadFile]).
func ImageFile(fileID string) api.Part {
	return api.Part{Type: api.PartTypeImage, FileID: &fileID}
}

// FilePart is a file part (a PDF, a spreadsheet, …) of an uploaded file,
// with the name the model sees ("" for none).
func FilePart(fileID, filename string) api.Part {
	p := api.Part{Type: api.PartTypeFile, FileID: &fileID}
	if filename != "" {
		p.Filename = &filename
	}
	return p
}

// FileURL is a file part that points at an http(s) or data: URL.
func FileURL(url, filename string) api.Part {
	p := api.Part{Type: api.PartTypeFile, URL: &url}
	if filename != "" {
		p.Filename = &filename
	}
	return p
}

// DataURL is bytes of mediaType as a data: URL of standard base64, for
// [ImageURL] and [FileURL]: a small image travels in the message itself
// (the server stores a long one as a file behind the scenes).
func DataURL(mediaType string, data []byte) string {
	return "data:" + mediaType + ";base64," + base64.StdEncoding.EncodeToString(data)
}

// DataPart is an application's named JSON value (the AI SDK's data-NAME
// parts). value is marshalled now: a value encoding/json cannot encode is
// an error.
func DataPart(name string, value any) (api.Part, error) {
	v, err := jsonValue(value)
	if err != nil {
		return api.Part{}, fmt.Errorf("logbook: data part %q: %w", name, err)
	}
	return api.Part{Type: api.PartTypeData, Name: &name, Value: &v}, nil
}

// ToolCall is an assistant's call of a tool, its arguments the JSON of args
// (a string or json.RawMessage is taken as JSON text as it is).
func ToolCall(id, name string, args any) (api.ToolCallInput, error) {
	text, err := jsonText(args)
	if err != nil {
		return api.ToolCallInput{}, fmt.Errorf("logbook: tool call %s arguments: %w", id, err)
	}
	return api.ToolCallInput{ID: id, Name: name, Arguments: text}, nil
}

// ToolOutput is a tool message's content: a string as text, anything else
// as a json part (a tool's result as a JSON value rather than JSON in a
// string).
func ToolOutput(output any) (*api.Content, error) {
	if s, ok := output.(string); ok {
		return Text(s), nil
	}
	v, err := jsonValue(output)
	if err != nil {
		return nil, fmt.Errorf("logbook: tool output: %w", err)
	}
	return Parts(api.Part{Type: api.PartTypeJSON, Value: &v}), nil
}

// jsonValue is v as encoding/json reads it back (maps, slices, float64…),
// so that a value that cannot be encoded fails here and not in the request.
func jsonValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}

func jsonText(v any) (string, error) {
	switch t := v.(type) {
	case string:
		if !json.Valid([]byte(t)) {
			return "", fmt.Errorf("not JSON: %.80q", t)
		}
		return t, nil
	case json.RawMessage:
		if !json.Valid(t) {
			return "", fmt.Errorf("not JSON: %.80q", t)
		}
		return string(t), nil
	}
	b, err := json.Marshal(v)
	return string(b), err
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
