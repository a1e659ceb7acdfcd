package client

import (
	"context"
	"iter"

	"github.com/logbook/logbook/client/api"
)

// Lists come in keyset pages; these iterators walk them, fetching a page
// when the one before is used up, and stop after the last or at the first
// error (yielded once, with a zero value). Leave params nil for the defaults;
// params.Limit is the page size, params.Cursor where to start.
//
//	for m, err := range c.ListMessages(ctx, sessionID, nil) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(m.Seq, m.Role, client.TextOf(m.Content))
//	}

// ListSessions walks the tenant's sessions, newest first, filtered by params.
func (c *Client) ListSessions(ctx context.Context, params *api.ListSessionsParams) iter.Seq2[api.Session, error] {
	p := deref(params)
	return paginate(p.Cursor, func(cursor *string) ([]api.Session, *string, error) {
		p.Cursor = cursor
		page, err := decode[api.SessionPage](c.raw.ListSessions(ctx, &p))
		if err != nil {
			return nil, nil, err
		}
		return page.Data, more(page.HasMore, page.NextCursor), nil
	})
}

// ListMessages walks a session's messages in seq order (params.Order "desc" for
// newest first).
func (c *Client) ListMessages(ctx context.Context, sessionID string, params *api.ListMessagesParams) iter.Seq2[api.Message, error] {
	p := deref(params)
	return paginate(p.Cursor, func(cursor *string) ([]api.Message, *string, error) {
		p.Cursor = cursor
		page, err := decode[api.MessagePage](c.raw.ListMessages(ctx, sessionID, &p))
		if err != nil {
			return nil, nil, err
		}
		return page.Data, more(page.HasMore, page.NextCursor), nil
	})
}

// ListCheckpoints walks a session's checkpoints, newest iteration first.
func (c *Client) ListCheckpoints(ctx context.Context, sessionID string, params *api.ListCheckpointsParams) iter.Seq2[api.Checkpoint, error] {
	p := deref(params)
	p.IfNoneMatch = nil // a 304 has no page to walk
	return paginate(p.Cursor, func(cursor *string) ([]api.Checkpoint, *string, error) {
		p.Cursor = cursor
		page, err := decode[api.CheckpointPage](c.raw.ListCheckpoints(ctx, sessionID, &p))
		if err != nil {
			return nil, nil, err
		}
		return page.Data, more(page.HasMore, page.NextCursor), nil
	})
}

// page is one page of any list: every list answers this shape.
type page[T any] struct {
	Data       []T     `json:"data"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

// list walks the pages fetch reads, from the one at cursor on.
func list[T any](cursor *string, fetch func(cursor *string) (*page[T], error)) iter.Seq2[T, error] {
	return paginate(cursor, func(cursor *string) ([]T, *string, error) {
		p, err := fetch(cursor)
		if err != nil {
			return nil, nil, err
		}
		return p.Data, more(p.HasMore, p.NextCursor), nil
	})
}

// paginate yields every item of every page, from the page at cursor on;
// fetch answers a page's items and the next page's cursor, nil after the last.
func paginate[T any](cursor *string, fetch func(cursor *string) ([]T, *string, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			items, next, err := fetch(cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if next == nil {
				return
			}
			cursor = next
		}
	}
}

func more(hasMore bool, next *string) *string {
	if !hasMore || next == nil || *next == "" {
		return nil
	}
	return next
}

// deref copies *p (the iterator owns its copy), or makes a zero T.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
