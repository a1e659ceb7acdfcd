package postgres

import (
	"context"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// appendStreamStoppedPG is SQLite's errStreamStopped, word for word.
var appendStreamStoppedPG = &model.Error{Kind: model.KindConflict, Code: "stream_stopped",
	Msg: "an earlier message of this stream failed: this one and every later one were not appended; resend from the first that failed"}

// appendRowPG is a message made ready before its transaction (ids, JSON,
// hashes), so that the transaction only decides, numbers and inserts.
type appendRowPG struct {
	msg          model.Message
	toolCalls    *string
	metadata     string
	parts        *string // the content's parts as JSON; nil for string content
	providerItem *string
	files        []string // the files the parts reference
	key          *string
	hash         []byte
	embedding    []byte // the message's own embedding, encoded; nil: none
	embedModel   string
}

// appendOpPG is one append request.
type appendOpPG struct {
	tenant, session string
	req             model.AppendRequest
	reqHash         []byte
	rows            []appendRowPG
	now             model.Time
}

// AppendMessages appends messages to a session in one all-or-nothing write and
// returns them with their seqs, in input order. Idempotency, errors and
// Replayed are as on SQLite (sqlite.Store.AppendMessages).
func (s *Store) AppendMessages(ctx context.Context, tenant, sessionID string, req model.AppendRequest) (model.AppendResult, error) {
	wait, err := s.QueueAppend(ctx, tenant, sessionID, req, nil)
	if err != nil {
		return model.AppendResult{}, err
	}
	return wait()
}

// QueueAppend queues an append for its session's group commit and returns a
// wait for its outcome. Appends to one session wait in one queue, so those
// one goroutine queues are stored in that order; whoever finds the queue idle
// writes what has gathered in it as one transaction (runAppendGroupPG). Once
// an append of stream fails, the stream's later ones are refused
// (stream_stopped).
func (s *Store) QueueAppend(ctx context.Context, tenant, sessionID string, req model.AppendRequest,
	stream *repo.AppendStream) (wait func() (model.AppendResult, error), err error) {
	now := model.Now()
	op := &appendOpPG{tenant: tenant, session: sessionID, req: req, rows: make([]appendRowPG, len(req.Messages)), now: now}
	for i, in := range req.Messages {
		if op.rows[i], err = prepareAppendRowPG(sessionID, now, in); err != nil {
			return nil, err
		}
	}
	if req.RequestKey != "" {
		op.reqHash = repo.HashRequest(req)
	}
	// As SQLite's enqueue: a caller already gone queues nothing (an error
	// here, not from wait); once queued, the append runs to its end.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	job := &appendJobPG{op: op, stream: stream, done: make(chan struct{})}
	s.appends.enqueue(s, job)
	return func() (model.AppendResult, error) {
		<-job.done
		return job.res, job.err
	}, nil
}

func prepareAppendRowPG(sessionID string, now model.Time, in model.NewMessage) (appendRowPG, error) {
	r := appendRowPG{msg: repo.NewStoredMessage(newID(model.PrefixMessage), sessionID, now, in)}
	var err error
	if r.parts, r.providerItem, r.toolCalls, err = repo.StoredColumns(r.msg); err != nil {
		return r, err
	}
	r.files = model.FileIDs(in.Content.Parts)
	r.metadata = r.msg.Metadata.String()
	if in.IdempotencyKey != "" {
		k := in.IdempotencyKey
		r.key = &k
		r.hash = repo.HashMessage(in)
	}
	if len(in.Embedding) > 0 {
		r.embedding, r.embedModel = repo.EncodeVector(in.Embedding), in.EmbeddingModel
	}
	return r, nil
}

// embeds reports whether any message of the append carries its own embedding.
func (a *appendOpPG) embeds() bool {
	for i := range a.rows {
		if a.rows[i].embedding != nil {
			return true
		}
	}
	return false
}

// carried is the embedding message i carries.
func (a *appendOpPG) carried(i int) repo.Carried {
	r := &a.rows[i]
	return repo.Carried{Model: r.embedModel, Dims: len(r.embedding) / 4}
}
