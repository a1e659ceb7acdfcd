package repo

import (
	"context"
	"sort"

	"github.com/logbook/logbook/internal/model"
)

// MessageCandidate is a message with its stored embedding.
type MessageCandidate struct {
	Hit       model.MessageHit
	Embedding []float32
}

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
// with the keyword ranking that keyword reads for hybrid.
func RankMessages(in model.MessageSearch, cands []MessageCandidate,
	keyword func(model.MessageSearch) (model.SearchResult[model.MessageHit], error)) (model.SearchResult[model.MessageHit], error) {
	vector := make([]model.MessageHit, 0, len(cands))
	for _, c := range cands {
		if len(c.Embedding) != len(in.QueryEmbedding) {
			continue
		}
		h := c.Hit
		h.Rank, h.Snippet = 1-Cosine(in.QueryEmbedding, c.Embedding), leadSnippet(h.Content)
		vector = append(vector, h)
	}
	sort.SliceStable(vector, func(i, j int) bool { return messageLess(vector[i], vector[j]) })
	if in.Mode == model.SearchVector {
		return model.SearchResult[model.MessageHit]{Data: PageHits(vector, 0, in.Limit)}, nil
	}
	kin := in
	kin.Mode, kin.Limit = model.SearchKeyword, HybridDepth
	kw, err := keyword(kin)
	if err != nil {
		return kw, err
	}
	fused := fuse(kw.Data, vector[:min(len(vector), HybridDepth)], messageKey, messageRank, messageLess)
	return model.SearchResult[model.MessageHit]{Data: PageHits(fused, 0, in.Limit), IndexLag: kw.IndexLag}, nil
}

// SearchMessagesByMeaning is a vector or hybrid conversation search as both
// backends run it: the vector_search fault point, the query embedding checked
// against the agent's pinned length (any length without an agent), then the
// candidates ranked and, for hybrid, fused with the keyword ranking.
func SearchMessagesByMeaning(ctx context.Context, tenant string, in model.MessageSearch, faults *Faults,
	getAgent func(ctx context.Context, tenant, id string) (model.Agent, error),
	candidates func() ([]MessageCandidate, error),
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
	cands, err := candidates()
	if err != nil {
		return out, err
	}
	return RankMessages(in, cands, keyword)
}
