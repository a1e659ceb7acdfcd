package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/ui"
)

// routes lists every route in one place, grouped by the scope a key needs.
func (s *Server) routes() *chi.Mux {
	r := chi.NewRouter()
	// GetHead answers HEAD on every GET route, for load balancers' health checks.
	// CORS comes before routing, which knows no OPTIONS, and before /v1's
	// authentication, which a preflight could not pass; the access log counts
	// the bytes compress put on the wire.
	r.Use(closeAfterChunked, s.requestID, s.accessLog, s.recoverer, s.cors.wrap, compress, middleware.GetHead)
	r.NotFound(s.notFound)
	r.MethodNotAllowed(s.methodNotAllowed)

	// The root is where a browser pointed at the server lands: the dashboard.
	r.Get("/", http.RedirectHandler(ui.Prefix+"/", http.StatusFound).ServeHTTP)
	r.Get("/healthz", s.healthz)
	r.Get("/readyz", s.readyz)
	r.Get("/openapi.yaml", s.openapi)
	r.Mount(ui.Prefix, ui.Handler()) // the dashboard's files are public; its /v1 calls carry the key
	r.Get("/docs", s.docs)
	r.Get("/docs/", s.docsSlash)
	r.Get("/docs/"+docsBundle, s.docsAsset)
	if s.pprof {
		r.Mount("/debug/pprof", s.pprofRoutes())
	}

	r.Route("/v1", func(r chi.Router) {
		r.Use(s.authenticate, s.rateLimit)

		r.Group(func(r chi.Router) {
			r.Use(s.require(model.ScopeRead), s.userBound)
			r.Get("/whoami", s.whoami)
			r.Get("/sessions", s.listSessions)
			r.Get("/sessions/{id}", s.getSession)
			r.Get("/sessions/{id}/messages", s.listMessages)
			r.Get("/sessions/{id}/messages/{message_id}", s.getMessage)
			r.Get("/sessions/{id}/messages-by-client-id/{client_id}", s.getMessageByClientID)
			r.Get("/sessions/{id}/messages/{message_id}/embedding", s.getMessageEmbedding)
			r.Get("/messages/search", s.searchMessages)
			r.Get("/sessions/{id}/checkpoint", s.getLatestCheckpoint)
			r.Get("/sessions/{id}/checkpoints", s.listCheckpoints)
			r.Get("/sessions/{id}/checkpoints/{iteration}", s.getCheckpoint)
			r.Get("/sessions/{id}/checkpoint-retention", s.getCheckpointRetention)
			r.Get("/checkpoints", s.listAllCheckpoints)
			r.Get("/sessions/{id}/resume", s.resume)
			r.Get("/sessions/{id}/export", s.exportSession)
			r.Get("/sessions/{id}/compactions", s.listCompactions)
			r.Get("/sessions/{id}/context", s.sessionContext)
			r.Get("/sessions/{id}/events", s.sessionEvents)
			r.Get("/events", s.tenantEvents)
			r.Get("/usage", s.usage)

			r.Get("/agents", s.listAgents)
			r.Get("/agents/{id}", s.getAgent)
			r.Get("/agents/{id}/export", s.exportAgent)
			r.Get("/agents/{id}/blocks", s.listBlocks)
			r.Get("/agents/{id}/blocks/{label}", s.getBlock)
			r.Get("/agents/{id}/blocks/{label}/history", s.blockHistory)
			r.Get("/agents/{id}/archival", s.listPassages)
			r.Get("/agents/{id}/archival/search", s.searchPassages)
			r.Get("/agents/{id}/archival/{passage_id}", s.getPassage)
			r.Get("/agents/{id}/messages/search", s.searchMessages)
			r.Get("/tools", s.listTools)
			r.Get("/files/{id}", s.downloadFile)

			r.Get("/items/namespaces", s.listItemNamespaces)
			r.Get("/items/export", s.exportItems)
			r.Get("/items/{namespace}/{key}", s.getItem)
			// Reads sent as POST for their bodies; what in them writes (a
			// batch's puts, a TTL refresh) needs the write scope (requireWrite).
			r.Post("/items/search", s.searchItems)
			r.Post("/items/batch", s.itemBatch)
		})

		r.Group(func(r chi.Router) {
			r.Use(s.require(model.ScopeWrite), s.userBound)
			// Appends' Idempotency-Key is their own, per session (messages.go);
			// every other write takes the generic one (idempotency.go).
			r.Post("/sessions/{id}/messages", s.appendMessages)
			r.Post("/sessions/{id}/messages/batch", s.appendMessageBatch)
		})

		r.Group(func(r chi.Router) {
			r.Use(s.require(model.ScopeWrite), s.userBound, s.idempotent)
			r.Post("/sessions", s.createSession)
			r.Patch("/sessions/{id}", s.updateSession)
			r.Delete("/sessions/{id}", s.closeSession)
			r.Put("/sessions/{id}/messages/{message_id}/embedding", s.putMessageEmbedding)
			r.Put("/sessions/{id}/checkpoint", s.putCheckpoint)
			r.Patch("/sessions/{id}/checkpoint", s.patchCheckpoint)
			r.Post("/sessions/{id}/checkpoints", s.createCheckpoint)
			r.Post("/sessions/{id}/checkpoint-writes", s.putCheckpointWrites)
			r.Put("/sessions/{id}/checkpoint-retention", s.putCheckpointRetention)
			r.Delete("/sessions/{id}/checkpoint-retention", s.deleteCheckpointRetention)
			r.Post("/sessions/{id}/fork", s.forkSession)
			r.Post("/sessions/{id}/rewind", s.rewind)
			r.Post("/sessions/{id}/repair", s.repairSession)
			r.Post("/sessions/{id}/compactions", s.createCompaction)
			r.Post("/sessions/import", s.importSession)
			r.Post("/agents/import", s.importAgent)
			r.Post("/files", s.uploadFile)

			r.Post("/agents", s.createAgent)
			r.Patch("/agents/{id}", s.updateAgent)
			r.Delete("/agents/{id}", s.deleteAgent)
			r.Put("/agents/{id}/blocks/{label}", s.putBlock)
			r.Delete("/agents/{id}/blocks/{label}", s.deleteBlock)
			r.Post("/agents/{id}/blocks/{label}/append", s.appendBlock)
			r.Post("/agents/{id}/blocks/{label}/replace", s.replaceBlock)
			r.Post("/agents/{id}/blocks/attach", s.attachBlock)
			r.Post("/agents/{id}/blocks/{label}/detach", s.detachBlock)
			r.Post("/agents/{id}/archival", s.createPassage)
			r.Post("/agents/{id}/archival/search", s.searchPassagesPost)
			r.Delete("/agents/{id}/archival/{passage_id}", s.deletePassage)
			// Searches through tools read, but the route is one: the tools that write
			// decide its scope.
			r.Post("/agents/{id}/tools/{tool_name}", s.runTool)

			r.Post("/items/import", s.importItems)
			r.Put("/items/{namespace}/{key}", s.putItem)
			r.Delete("/items/{namespace}/{key}", s.deleteItem)
		})

		r.Group(func(r chi.Router) {
			r.Use(s.require(model.ScopeAdmin), s.idempotent)
			r.Post("/admin/keys", s.createKey)
			r.Get("/admin/keys", s.listKeys)
			r.Delete("/admin/keys/{id}", s.revokeKey)
			r.Post("/admin/purge", s.purgeSessions)
			r.Get("/admin/integrity", s.checkIntegrity)
			r.Post("/admin/backup", s.backupDatabase)
			r.Get("/admin/jobs/{id}", s.getJob)
			r.Get("/admin/embedding", s.getTenantEmbedding)
			r.Put("/admin/embedding", s.putTenantEmbedding)
			r.Delete("/admin/embedding", s.deleteTenantEmbedding)
		})
	})
	return r
}
