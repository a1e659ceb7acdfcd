-- +goose Up
-- Checkpoints of a large state that changes a little each iteration took a
-- whole copy each: 100 kept iterations of a 200 KB state were 20 MB a session.
-- A row now says how it keeps its state (see internal/repo/sqlite/checkpoint_store.go):
--   kind 'full',  body NULL:     the canonical state in `state`, as before (old
--                                rows, and states too small to be worth more);
--   kind 'full',  codec 'zstd':  the canonical state compressed in `body`;
--   kind 'delta':                an RFC 7396 merge patch in `body` (compressed
--                                when codec says so) that turns the state of
--                                base_iteration, a newer checkpoint, into this one.
-- The latest checkpoint is always full, so reading it patches nothing.
-- base_iteration comes before body so that reading it never walks a large
-- body's overflow pages.
ALTER TABLE checkpoints ADD COLUMN kind TEXT NOT NULL DEFAULT 'full' CHECK (kind IN ('full', 'delta'));
ALTER TABLE checkpoints ADD COLUMN codec TEXT NOT NULL DEFAULT '' CHECK (codec IN ('', 'zstd'));
ALTER TABLE checkpoints ADD COLUMN base_iteration INTEGER;
ALTER TABLE checkpoints ADD COLUMN body BLOB;

-- +goose Down
-- The older code reads `state` only and SQL can neither decompress nor apply a
-- patch, so a database holding rows it could not read is refused rather than
-- silently stripped of them: export those sessions, purge them, migrate down,
-- then import them with the older binary.
CREATE TEMP TABLE checkpoints_down_guard (
    n INTEGER CONSTRAINT "checkpoints stored as deltas or compressed need migration 00007: export and purge their sessions first" CHECK (n = 0)
);
INSERT INTO checkpoints_down_guard SELECT COUNT(*) FROM checkpoints WHERE kind <> 'full' OR body IS NOT NULL;
DROP TABLE checkpoints_down_guard;
ALTER TABLE checkpoints DROP COLUMN body;
ALTER TABLE checkpoints DROP COLUMN base_iteration;
ALTER TABLE checkpoints DROP COLUMN codec;
ALTER TABLE checkpoints DROP COLUMN kind;
