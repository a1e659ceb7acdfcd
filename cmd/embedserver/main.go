// Command embedserver serves Logbook's stand-in embedding endpoint
// (internal/embed/standin) on loopback, for trying server-computed
// embeddings without a provider:
//
//	bin/embedserver -addr 127.0.0.1:11435   # make build builds both
//	bin/logbook --embedding-url http://127.0.0.1:11435/v1/embeddings --embedding-model logbook-standin
//
// Its vectors know only a small thesaurus; use a real provider (Ollama,
// OpenAI) for real memory.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/logbook/logbook/internal/embed/standin"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:11435", "address to listen on")
	dims := flag.Int("dims", 64, "dimensions of every vector (a request's dimensions wins)")
	flag.Parse()
	mux := http.NewServeMux()
	mux.Handle("POST /v1/embeddings", &standin.Server{Dims: *dims})
	fmt.Fprintf(os.Stderr, "stand-in embeddings (model %s) at http://%s/v1/embeddings\n", standin.Model, *addr)
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
