package repo

import (
	"context"
	"sort"

	"github.com/logbook/logbook/internal/model"
)

// MessageCandidate is an embedded message that may answer a search by
// meaning: its hit without Content and Snippet (read only for the hits a
// search returns), and Owner, the session whose row it is (an ancestor's id
// when a fork reads it; Hit.SessionID is then the fork's).
type MessageCandidate struct {
	Hit   model.MessageHit
	Owner string
}

// MessageVectors calls visit with every embedded message that passes a
// search's filters and its embedding, in a buffer visit must not keep: a
// search streams the rows instead of holding every embedding at once.
type MessageVectors func(visit func(c MessageCandidate, embedding []float32)) error

// MessageContents returns the contents of the candidates' messages, in order.
type MessageContents func(cands []MessageCandidate) ([]string, error)

func messageKey(h *model.MessageHit) string    { return h.SessionID + "\x00" + h.MessageID }
func messageRank(h *model.MessageHit) *float64 { return &h.Rank }

func messageLess(a, b model.MessageHit) bool {
	if a.Rank != b.Rank {
		return a.Rank < b.Rank
	}
	if a.CreatedAt != b.CreatedAt {
		return a.CreatedAt > b.CreatedAt
	}
	return messageKey(&a) > messageKey(&b)
}

// RankMessages answers a vector or hybrid conversation search as
// RankPassages does passages: cosine distance to the query embedding, fused
// with the keyword ranking that keyword reads for hybrid. Only the hits it
// can return have their content read.
func RankMessages(in model.MessageSearch, vectors MessageVectors, contents MessageContents,
	keyword func(model.MessageSearch) (model.SearchResult[model.MessageHit], error)) (model.SearchResult[model.MessageHit], error) {
	var scored []MessageCandidate
	err := vectors(func(c MessageCandidate, embedding []float32) {
		if len(embedding) == len(in.QueryEmbedding) {
			c.Hit.Rank = 1 - Cosine(in.QueryEmbedding, embedding)
			scored = append(scored, c)
		}
	})
	if err != nil {
		return model.SearchResult[model.MessageHit]{}, err
	}
	sort.SliceStable(scored, func(i, j int) bool { return messageLess(scored[i].Hit, scored[j].Hit) })
	depth := in.Limit
	if in.Mode != model.SearchVector {
		depth = HybridDepth
	}
	scored = PageHits(scored, 0, depth)
	texts, err := contents(scored)
	if err != nil {
		return model.SearchResult[model.MessageHit]{}, err
	}
	vector := make([]model.MessageHit, len(scored))
	for i, c := range scored {
		vector[i] = c.Hit
		vector[i].Content, vector[i].Snippet = texts[i], leadSnippet(texts[i])
	}
	if in.Mode == model.SearchVector {
		return model.SearchResult[model.MessageHit]{Data: vector}, nil
	}
	kin := in
	kin.Mode, kin.Limit = model.SearchKeyword, HybridDepth
	kw, err := keyword(kin)
	if err != nil {
		return kw, err
	}
	fused := fuse(kw.Data, vector, messageKey, messageRank, messageLess)
	return model.SearchResult[model.MessageHit]{Data: PageHits(fused, 0, in.Limit), IndexLag: kw.IndexLag, Partial: kw.Partial}, nil
}

// SearchMessagesByMeaning is a vector or hybrid conversation search as both
// backends run it: the vector_search fault point, the query embedding checked
// against the agent's pinned length (any length without an agent), then the
// candidates ranked and, for hybrid, fused with the keyword ranking.
func SearchMessagesByMeaning(ctx context.Context, tenant string, in model.MessageSearch, faults *Faults,
	getAgent func(ctx context.Context, tenant, id string) (model.Agent, error),
	vectors MessageVectors, contents MessageContents,
	keyword func(model.MessageSearch) (model.SearchResult[model.MessageHit], error)) (model.SearchResult[model.MessageHit], error) {
	var out model.SearchResult[model.MessageHit]
	if err := faults.Check(PointVectorSearch); err != nil {
		return out, err
	}
	dims := 0
	if in.AgentID != "" {
		a, err := getAgent(ctx, tenant, in.AgentID)
		if err != nil {
			return out, err
		}
		if a.EmbeddingDims != nil {
			dims = *a.EmbeddingDims
		}
	}
	if err := CheckQueryEmbedding(in.QueryEmbedding, dims); err != nil {
		return out, err
	}
	return RankMessages(in, vectors, contents, keyword)
}
