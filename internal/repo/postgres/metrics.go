package postgres

import "github.com/jackc/pgx/v5/pgxpool"

// PoolStat is a snapshot of the connection pool's figures (connections
// acquired, idle and open; acquisitions, their waits and time), for
// monitoring. It takes the pool's lock briefly; call it at scrape time.
func (s *Store) PoolStat() *pgxpool.Stat { return s.pool.Stat() }
