package main

import (
	"context"
	"fmt"
	"net"

	"github.com/logbook/logbook/internal/repo"
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
func decideOpenMode(ctx context.Context, store *repo.Store, addr net.Addr, insecure bool, log zerolog.Logger) (bool, error) {
	hasKeys, err := store.HasActiveKeys(ctx)
	if err != nil {
		return false, err
	}
	loopback := isLoopback(addr)
	switch {
	case hasKeys:
		return loopback || insecure, nil // open mode returns only if every key is revoked
	case loopback:
		log.Warn().Str("addr", addr.String()).Msg("open mode: no API key exists, so requests without a key act as tenant \"default\"; create a key (server keys create) to require one")
		return true, nil
	case insecure:
		log.Warn().Str("addr", addr.String()).Msg("open mode on a non-loopback address (--insecure-no-auth): anyone who can reach this port can read and write everything")
		return true, nil
	}
	return false, fmt.Errorf("refusing to serve %s without authentication: no API key exists and the address is not loopback; "+
		"create a key first (server keys create --tenant NAME --scope admin) or pass --insecure-no-auth", addr)
}
