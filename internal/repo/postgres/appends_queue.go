package postgres

import (
	"sync"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// appendGroupMax bounds the appends one transaction writes: enough to carry
// a burst on a hot session in a few commits, few enough that the first of
// them is not kept waiting long for the last.
const appendGroupMax = 64

// appendJobPG is one queued append and, once done is closed, its outcome.
type appendJobPG struct {
	op     *appendOpPG
	stream *repo.AppendStream
	res    model.AppendResult
	err    error
	done   chan struct{}
}

// finish gives the append its outcome; a failure stops its stream.
func (j *appendJobPG) finish(res model.AppendResult, err error) {
	if err != nil && j.stream != nil {
		j.stream.Fail()
	}
	j.res, j.err = res, err
	close(j.done)
}

type appendQueueKeyPG struct{ tenant, session string }

// appendQueuesPG is where appends wait for their session's writer. A session
// has an entry while a writer runs for it: appends that arrive meanwhile
// gather there and go in its next transaction, so the appends of one process
// take the session's row lock once per group, not once each, and appends to
// different sessions never wait for each other here.
type appendQueuesPG struct {
	mu       sync.Mutex
	sessions map[appendQueueKeyPG][]*appendJobPG
}

// enqueue queues job and, when its session has no writer, starts one.
func (q *appendQueuesPG) enqueue(s *Store, job *appendJobPG) {
	key := appendQueueKeyPG{job.op.tenant, job.op.session}
	q.mu.Lock()
	if q.sessions == nil {
		q.sessions = map[appendQueueKeyPG][]*appendJobPG{}
	}
	waiting, busy := q.sessions[key]
	q.sessions[key] = append(waiting, job)
	q.mu.Unlock()
	if !busy {
		go q.drain(s, key)
	}
}

// drain writes the session's queue, a group at a time, until it is empty.
func (q *appendQueuesPG) drain(s *Store, key appendQueueKeyPG) {
	for {
		q.mu.Lock()
		jobs := q.sessions[key]
		if len(jobs) == 0 {
			delete(q.sessions, key)
			q.mu.Unlock()
			return
		}
		n := min(len(jobs), appendGroupMax)
		q.sessions[key] = jobs[n:] // still present: the writer is busy
		q.mu.Unlock()
		s.runAppendGroupPG(jobs[:n:n])
	}
}
