package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

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

// QueueAppend runs the append at once, in its own transaction, and returns a
// wait that gives the outcome. SQLite queues appends for its one writer to
// group; here each append is a transaction of its own, so running it before
// returning is what keeps the appends one goroutine queues in their order.
// Once an append of stream fails, the stream's later ones are refused
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
	// here, not from wait); once begun, the append runs to its end.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res, appendErr := s.runAppendPG(ctx, op, stream)
	return func() (model.AppendResult, error) { return res, appendErr }, nil
}

// runAppendPG decides and writes one append; any failure stops its stream.
func (s *Store) runAppendPG(ctx context.Context, op *appendOpPG, stream *repo.AppendStream) (model.AppendResult, error) {
	var res model.AppendResult
	err := s.writeFaultedPG(ctx, func(ctx context.Context, tx pgx.Tx) error {
		// SQLite checks the stream inside its writer, after begin and exec.
		if stream != nil && stream.Failed() {
			return appendStreamStoppedPG
		}
		var err error
		res, err = s.appendTxPG(ctx, tx, op)
		return err
	})
	if err != nil {
		if stream != nil {
			stream.Fail()
		}
		return model.AppendResult{}, err
	}
	return res, nil
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
	return r, nil
}
