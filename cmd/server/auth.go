package main

import (
	"context"
	"fmt"
	"github.com/logbook/logbook/internal/repo"
	"net"

	"github.com/rs/zerolog"
)

// isLoopback reports whether a listener on addr is reachable from this machine
// only. An empty host ("":8080) listens on every interface.
func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// decideOpenMode says whether requests without a key may act as the default
// tenant, refusing to serve an unauthenticated API to the network by accident.
// It is decided here, once: a server that starts with a key demands keys until it
// exits, whatever happens to its keys meanwhile.
func decideOpenMode(ctx context.Context, store repo.Keys, addr net.Addr, insecure bool, log zerolog.Logger) (bool, error) {
	hasKeys, err := store.HasActiveKeys(ctx)
	if err != nil {
		return false, err
	}
	loopback := isLoopback(addr)
	switch {
	case hasKeys:
		log.Info().Str("addr", addr.String()).Msg("API keys exist: every /v1 request needs one. To go back to open mode, revoke every key (logbook keys revoke) and restart the server")
		return false, nil
	case loopback:
		log.Warn().Str("addr", addr.String()).Msg("open mode: no API key exists, so requests without a key act as tenant \"default\"; the first key created (logbook keys create, or POST /v1/admin/keys) ends open mode until the server restarts")
		return true, nil
	case insecure:
		log.Warn().Str("addr", addr.String()).Msg("open mode on a non-loopback address (--insecure-no-auth): anyone who can reach this port can read and write everything until the first key is created")
		return true, nil
	}
	return false, fmt.Errorf("refusing to serve %s without authentication: no API key exists and the address is not loopback; "+
		"create a key first (logbook keys create --tenant NAME --scope admin) or pass --insecure-no-auth", addr)
}
