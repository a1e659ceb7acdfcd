package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

type toolList struct {
	Data []model.ToolDef `json:"data"`
}

func (s *Server) listTools(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, r, http.StatusOK, toolList{model.MemoryTools})
}

// runTool runs one Letta memory tool with the arguments a model wrote. A call the
// model got wrong in a way it can fix (a missing block, text not found, a limit)
// answers 200 with is_error, because the model must read it; a malformed call is a
// 422, and a missing agent a 404, as everywhere else.
func (s *Server) runTool(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "tool_name")
	tool, ok := s.tools()[name]
	if !ok {
		s.writeError(w, r, model.Errorf(model.KindNotFound, "not_found",
			"no tool %q; GET /v1/tools lists them", name))
		return
	}
	res, err := tool(r.Context(), w, r, tenantOf(r), chi.URLParam(r, "id"))
	if err != nil {
		if msg, ok := toolFailure(err); ok {
			res = model.ToolError("%s", msg)
		} else {
			s.writeError(w, r, err)
			return
		}
	}
	s.writeJSON(w, r, http.StatusOK, res)
}

type toolFunc func(ctx context.Context, w http.ResponseWriter, r *http.Request, tenant, agentID string) (model.ToolResult, error)

// tools maps each tool's name to its decoding and its one store call.
func (s *Server) tools() map[string]toolFunc {
	return map[string]toolFunc{
		"core_memory_append": func(ctx context.Context, w http.ResponseWriter, r *http.Request, tenant, agentID string) (model.ToolResult, error) {
			in, err := decode[model.CoreMemoryAppendArgs](s, w, r)
			if err != nil {
				return model.ToolResult{}, err
			}
			_, err = s.store.AppendBlock(ctx, tenant, agentID, in.Label, in.Content, repo.EditByTool)
			return s.memoryEdited(ctx, tenant, agentID, in.Label, err)
		},
		"core_memory_replace": func(ctx context.Context, w http.ResponseWriter, r *http.Request, tenant, agentID string) (model.ToolResult, error) {
			in, err := decode[model.CoreMemoryReplaceArgs](s, w, r)
			if err != nil {
				return model.ToolResult{}, err
			}
			_, err = s.store.ReplaceBlock(ctx, tenant, agentID, in.Label, in.OldContent, in.NewContent, repo.EditByTool)
			return s.memoryEdited(ctx, tenant, agentID, in.Label, err)
		},
		"memory_insert":  s.memoryInsert,
		"memory_replace": s.memoryReplace,
		"memory_rethink": s.memoryRethink,
		"memory":         s.memoryTool,
		"archival_memory_insert": func(ctx context.Context, w http.ResponseWriter, r *http.Request, tenant, agentID string) (model.ToolResult, error) {
			in, err := decode[model.ArchivalMemoryInsertArgs](s, w, r)
			if err != nil {
				return model.ToolResult{}, err
			}
			if _, err := s.store.CreatePassage(ctx, tenant, agentID, model.CreatePassage{Content: in.Content, Tags: in.Tags}); err != nil {
				return model.ToolResult{}, err
			}
			return model.ToolResult{Result: "None"}, nil // what Letta's tool returns
		},
		"archival_memory_search": func(ctx context.Context, w http.ResponseWriter, r *http.Request, tenant, agentID string) (model.ToolResult, error) {
			in, err := decode[model.ArchivalMemorySearchArgs](s, w, r)
			if err != nil {
				return model.ToolResult{}, err
			}
			search := model.PassageSearch{Query: in.Query, Tags: in.Tags, Limit: model.ArchivalPageSize}
			if in.Page != nil {
				search.Offset = *in.Page * model.ArchivalPageSize
			}
			if search.After, search.Before, err = toolRange(in.StartDatetime, in.EndDatetime); err != nil {
				return model.ToolError("%s", err.Error()), nil
			}
			search.Mode, search.QueryEmbedding = s.toolSearchMode(ctx, tenant, agentID, in.Query)
			hits, err := s.store.SearchPassages(ctx, tenant, agentID, search)
			if err != nil {
				return model.ToolResult{}, err
			}
			type item struct {
				Timestamp string   `json:"timestamp"`
				Content   string   `json:"content"`
				Tags      []string `json:"tags,omitempty"`
			}
			items := make([]item, len(hits))
			for i, h := range hits {
				items[i] = item{h.CreatedAt.String(), h.Content, h.Tags}
			}
			page := search.Offset / model.ArchivalPageSize
			return model.ToolResult{Result: model.ToolText(fmt.Sprintf("Showing %d results (page %d):", len(items), page), items, len(items))}, nil
		},
		"conversation_search": func(ctx context.Context, w http.ResponseWriter, r *http.Request, tenant, agentID string) (model.ToolResult, error) {
			in, err := decode[model.ConversationSearchArgs](s, w, r)
			if err != nil {
				return model.ToolResult{}, err
			}
			search := model.MessageSearch{Query: in.Query, AgentID: agentID, Roles: in.Roles, Limit: model.ArchivalPageSize}
			if in.Limit != nil {
				search.Limit = *in.Limit
			}
			if search.After, search.Before, err = toolRange(in.StartDate, in.EndDate); err != nil {
				return model.ToolError("%s", err.Error()), nil
			}
			search.Mode, search.QueryEmbedding = s.toolSearchMode(ctx, tenant, agentID, in.Query)
			res, err := s.store.SearchMessages(ctx, tenant, search)
			if err != nil {
				return model.ToolResult{}, err
			}
			type item struct {
				Timestamp string     `json:"timestamp"`
				Role      model.Role `json:"role"`
				Content   string     `json:"content"`
			}
			items := make([]item, len(res.Data))
			for i, h := range res.Data {
				items[i] = item{h.CreatedAt.String(), h.Role, h.Content}
			}
			return model.ToolResult{Result: model.ToolText(fmt.Sprintf("Showing %d results:", len(items)), items, len(items))}, nil
		},
	}
}

// memoryEdited answers a core memory edit as Letta does ("None" when it worked),
// turning a missing block into the text a model can act on.
func (s *Server) memoryEdited(ctx context.Context, tenant, agentID, label string, err error) (model.ToolResult, error) {
	if err == nil {
		return model.ToolResult{Result: "None"}, nil
	}
	if model.IsNotFound(err, "block") {
		blocks, lerr := s.store.ListBlocks(ctx, tenant, agentID)
		if lerr != nil {
			return model.ToolResult{}, lerr
		}
		labels := make([]string, len(blocks))
		for i, b := range blocks {
			labels[i] = b.Label
		}
		return model.ToolError("Memory block '%s' does not exist (available blocks: %s)", label, strings.Join(labels, ", ")), nil
	}
	return model.ToolResult{}, err
}

// toolFailure says whether err is a failure the model should read, and its text.
func toolFailure(err error) (string, bool) {
	e := model.AsError(err)
	switch e.Code {
	case "limit_exceeded":
		return fmt.Sprintf("Edit failed: Exceeds %v character limit (requested %v).", e.Extra["limit"], e.Extra["requested"]), true
	case "old_not_found", "tool_refused":
		return e.Msg, true
	}
	return "", false
}

func toolRange(start, end *string) (after, before *model.Time, err error) {
	if start != nil && *start != "" {
		t, err := model.ParseToolTime(*start, false)
		if err != nil {
			return nil, nil, err
		}
		after = &t
	}
	if end != nil && *end != "" {
		t, err := model.ParseToolTime(*end, true)
		if err != nil {
			return nil, nil, err
		}
		before = &t
	}
	return after, before, nil
}
