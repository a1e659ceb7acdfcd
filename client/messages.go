package client

import (
	"context"
	"iter"

	"github.com/logbook/logbook/client/api"
)

// A session's messages: appends, reads, search, the context of the next
// model call and its compactions. Each returns a *Problem for any non-2xx
// answer.

// AppendMessage appends one message and answers the stored message with its
// seq.
//
// The request carries a new Idempotency-Key, which its retries reuse: a retry
// after an answer was lost is answered with what the first try stored,
// never appended twice. For a key that also survives a crash of this
// process, set m.IdempotencyKey (e.g. "turn-7-user") as well.
func (c *Client) AppendMessage(ctx context.Context, sessionID string, m api.MessageAppend) (*api.Message, error) {
	var body api.AppendRequest
	if err := body.FromMessageAppend(m); err != nil {
		return nil, err
	}
	key := newKey()
	return decode[api.Message](c.raw.AppendMessage(ctx, sessionID, &api.AppendMessageParams{IdempotencyKey: &key}, body))
}

// AppendMessages appends 1–1000 messages, all or nothing, and answers them
// stored, in order. Retries are safe as for [Client.AppendMessage].
func (c *Client) AppendMessages(ctx context.Context, sessionID string, b api.MessageBatch) ([]api.Message, error) {
	key := newKey()
	res, err := decode[api.MessageBatchResult](c.raw.AppendMessageBatch(ctx, sessionID, &api.AppendMessageBatchParams{IdempotencyKey: &key}, b))
	if err != nil {
		return nil, err
	}
	return res.Data, nil
}

// GetMessage reads one message by its id.
func (c *Client) GetMessage(ctx context.Context, sessionID, messageID string) (*api.Message, error) {
	return decode[api.Message](c.raw.GetMessage(ctx, sessionID, messageID))
}

// GetMessageByClientID reads the message of the session's history whose
// client_id is clientID (a *Problem with code not_found when none is).
func (c *Client) GetMessageByClientID(ctx context.Context, sessionID, clientID string) (*api.Message, error) {
	return decode[api.Message](c.raw.GetMessageByClientID(ctx, sessionID, clientID))
}

// GetMessageEmbedding reads a message's embedding and its state.
func (c *Client) GetMessageEmbedding(ctx context.Context, sessionID, messageID string) (*api.MessageEmbedding, error) {
	return decode[api.MessageEmbedding](c.raw.GetMessageEmbedding(ctx, sessionID, messageID))
}

// PutMessageEmbedding stores the client's embedding of a message, ready
// for search by meaning at once. Storing the same one again changes
// nothing, so it is retried after a lost answer.
func (c *Client) PutMessageEmbedding(ctx context.Context, sessionID, messageID string, in api.MessageEmbeddingPut) (*api.MessageEmbedding, error) {
	return decode[api.MessageEmbedding](c.raw.PutMessageEmbedding(repeatable(ctx), sessionID, messageID, in))
}

// SearchMessages searches the tenant's messages, best first (params.Q is
// searched as words, never as syntax; params.Mode picks words, meaning or
// both).
func (c *Client) SearchMessages(ctx context.Context, params *api.SearchMessagesParams) (*api.MessageSearchResult, error) {
	return decode[api.MessageSearchResult](c.raw.SearchMessages(ctx, params))
}

// GetContext reads what the next model call needs: the latest
// compaction's summary, the system messages and the newest messages that
// fit params.MaxTokens (with the agent's memory blocks when params.Include
// is "blocks").
func (c *Client) GetContext(ctx context.Context, sessionID string, params *api.GetSessionContextParams) (*api.SessionContext, error) {
	return decode[api.SessionContext](c.raw.GetSessionContext(ctx, sessionID, params))
}

// CreateCompaction records that in.Summary stands for messages
// 1..in.ThroughSeq; with in.Messages it appends them after it in the same
// write. Its Idempotency-Key makes a retry after a lost answer safe.
func (c *Client) CreateCompaction(ctx context.Context, sessionID string, in api.CompactionCreate) (*api.CompactionCreated, error) {
	return decode[api.CompactionCreated](c.raw.CreateCompaction(ctx, sessionID, nil, in))
}

// ListCompactions walks a session's compactions, newest first.
func (c *Client) ListCompactions(ctx context.Context, sessionID string, params *api.ListCompactionsParams) iter.Seq2[api.Compaction, error] {
	p := deref(params)
	return list[api.Compaction](p.Cursor, func(cursor *string) (*page[api.Compaction], error) {
		p.Cursor = cursor
		return decode[page[api.Compaction]](c.raw.ListCompactions(ctx, sessionID, &p))
	})
}
