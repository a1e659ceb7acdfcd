package postgres

import (
	"slices"
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

// appendQueuesPG is where appends wait for a writer. Each session has a queue
// of its own, which keeps one goroutine's appends in order; a session whose
// appends wait, and that no writer holds, is ready. A writer takes the ready
// sessions in turn, up to appendGroupMax appends, and writes them in one
// transaction (runAppendMultiPG, or runAppendGroupPG for one session); a
// session is in one writer's hands at a time, and its appends that arrive
// meanwhile go in its next group. At most max writers run at once: under
// load each takes many sessions, and a process commits a few groups at a
// time, not a transaction per session.
type appendQueuesPG struct {
	mu       sync.Mutex
	sessions map[appendQueueKeyPG]*appendSessionQueuePG
	ready    []appendQueueKeyPG
	writers  int
	max      int
	paused   bool // tests: no writer starts (PauseAppendsForTest)
}

type appendSessionQueuePG struct {
	jobs          []*appendJobPG
	busy, isReady bool
	// alone: a group found its row held by another transaction; its next
	// group is its own (runAppendGroupPG), which waits for the row, so that
	// no group of many sessions waits for one.
	alone bool
}

// enqueue queues job and starts a writer if one may start.
func (q *appendQueuesPG) enqueue(s *Store, job *appendJobPG) {
	key := appendQueueKeyPG{job.op.tenant, job.op.session}
	q.mu.Lock()
	if q.sessions == nil {
		q.sessions = map[appendQueueKeyPG]*appendSessionQueuePG{}
	}
	sq := q.sessions[key]
	if sq == nil {
		sq = &appendSessionQueuePG{}
		q.sessions[key] = sq
	}
	sq.jobs = append(sq.jobs, job)
	if !sq.busy && !sq.isReady {
		sq.isReady = true
		q.ready = append(q.ready, key)
	}
	start := !q.paused && q.writers < max(1, q.max)
	if start {
		q.writers++
	}
	q.mu.Unlock()
	if start {
		go q.write(s)
	}
}

// write writes groups until no session is ready.
func (q *appendQueuesPG) write(s *Store) {
	for {
		groups := q.take()
		switch {
		case len(groups) == 0:
			return
		case len(groups) == 1:
			s.runAppendGroupPG(groups[0].jobs)
			q.done(groups, nil)
		default:
			q.done(groups, s.runAppendMultiPG(groups))
		}
	}
}

// take hands the ready sessions' appends to a writer, up to appendGroupMax;
// nothing left: the writer ends. Appends that carry embeddings lock their
// agent's row too, which several sessions' locks taken in order do not
// cover: their session goes in a group of its own.
func (q *appendQueuesPG) take() []appendSessionJobsPG {
	q.mu.Lock()
	defer q.mu.Unlock()
	var groups []appendSessionJobsPG
	n := 0
	for len(q.ready) > 0 && n < appendGroupMax {
		key := q.ready[0]
		sq := q.sessions[key]
		k := min(len(sq.jobs), appendGroupMax-n)
		jobs := sq.jobs[:k:k]
		if sq.alone || slices.ContainsFunc(jobs, func(j *appendJobPG) bool { return j.op.embeds() }) {
			if len(groups) > 0 {
				break // next time, alone
			}
			q.ready = q.ready[1:]
			sq.isReady, sq.busy, sq.alone, sq.jobs = false, true, false, sq.jobs[k:]
			return []appendSessionJobsPG{{key: key, jobs: jobs}}
		}
		q.ready = q.ready[1:]
		sq.isReady, sq.busy, sq.jobs = false, true, sq.jobs[k:]
		groups = append(groups, appendSessionJobsPG{key: key, jobs: jobs})
		n += k
	}
	if len(groups) == 0 {
		q.writers--
	}
	return groups
}

// done gives the sessions of a written group back: ready again if appends
// arrived meanwhile, or if the group left some (busy: their row was held),
// which go back before those that arrived.
func (q *appendQueuesPG) done(groups []appendSessionJobsPG, busy map[appendQueueKeyPG][]*appendJobPG) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, g := range groups {
		sq := q.sessions[g.key]
		sq.busy = false
		if left := busy[g.key]; len(left) > 0 {
			sq.jobs, sq.alone = append(left, sq.jobs...), true
		}
		switch {
		case len(sq.jobs) > 0:
			sq.isReady = true
			q.ready = append(q.ready, g.key)
		default:
			delete(q.sessions, g.key)
		}
	}
}
