package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// A block's history keeps its newest versions, at most blockHistoryVersions of
// them and at most blockHistoryBytes of text in all (the current version always
// stays), the bounds SQLite keeps. Every version is stored whole, so without a
// bound a 1 MB block given N one-character appends would keep N MB.
const (
	blockHistoryVersions = 100
	blockHistoryBytes    = 8 << 20
)

// pruneBlockHistory drops the versions of b's history past those bounds. Bytes
// are octet_length, UTF-8 bytes in a UTF8 database, as SQLite counts them.
func pruneBlockHistory(ctx context.Context, tx pgx.Tx, tenant string, b *model.Block) error {
	_, err := tx.Exec(ctx, `DELETE FROM block_history WHERE tenant_id = $1 AND agent_id = $2 AND label = $3
		AND version < GREATEST($4::bigint - $5::bigint + 1,
			COALESCE((SELECT MIN(version) FROM (SELECT version, SUM(octet_length(value)) OVER (ORDER BY version DESC) AS total
				FROM block_history WHERE tenant_id = $1 AND agent_id = $2 AND label = $3) kept WHERE total <= $6::bigint), $4::bigint))`,
		tenant, b.AgentID, b.Label, b.Version, blockHistoryVersions, blockHistoryBytes)
	return err
}

// BlockHistory lists a block's versions, newest first. Errors: KindNotFound.
func (s *Store) BlockHistory(ctx context.Context, tenant, agentID, label string, p repo.PageRequest) (model.Page[model.Block], error) {
	if err := s.faults.Check(repo.PointBlockRead); err != nil {
		return model.Page[model.Block]{}, err
	}
	q := repo.Fingerprint("block_history", agentID, label)
	cur, hasCur, err := repo.DecodeCursor(p.Cursor, q)
	if err != nil {
		return model.Page[model.Block]{}, err
	}
	owner, ownerLabel, err := memResolveBlock(ctx, s.pool, tenant, agentID, label)
	if err != nil {
		return model.Page[model.Block]{}, err
	}
	limit := p.Clamp()
	cond, args := "", []any{tenant, owner, ownerLabel, limit + 1}
	if hasCur {
		cond, args = " AND h.version < $5", append(args, cur.N)
	}
	rows, err := s.pool.Query(ctx, `SELECT h.version, h.value, h.limit_chars, h.description, h.read_only, h.updated_at, b.id
		FROM block_history h JOIN blocks b USING (tenant_id, agent_id, label)
		WHERE h.tenant_id = $1 AND h.agent_id = $2 AND h.label = $3`+cond+` ORDER BY h.version DESC LIMIT $4`, args...)
	if err != nil {
		return model.Page[model.Block]{}, mapErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (model.Block, error) {
		var (
			b        = model.Block{AgentID: owner, Label: ownerLabel}
			readOnly int32
			updated  int64
		)
		err := r.Scan(&b.Version, &b.Value, &b.Limit, &b.Description, &readOnly, &updated, &b.ID)
		b.ReadOnly, b.UpdatedAt = readOnly != 0, model.Time(updated)
		return b, err
	})
	if err != nil {
		return model.Page[model.Block]{}, mapErr(err)
	}
	if len(out) == 0 && !hasCur {
		if _, err := memFindBlock(ctx, s.pool, tenant, agentID, label); err != nil {
			return model.Page[model.Block]{}, err
		}
	}
	for i := range out {
		out[i].SeenAs(agentID, label)
	}
	if err := memFillShared(ctx, s.pool, tenant, out); err != nil {
		return model.Page[model.Block]{}, err
	}
	return repo.NewPage(out, limit, func(last model.Block) repo.Cursor { return repo.Cursor{Q: q, N: last.Version} }), nil
}
