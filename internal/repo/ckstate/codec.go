package ckstate

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// How a checkpoint row keeps its state. The latest checkpoint is always full;
// when a new one arrives, the one before it becomes a delta from the new state
// when that is much smaller (delta.go). Reading the latest therefore patches
// nothing, and reading an older one patches back from the nearest full row
// above it.
const (
	KindFull  = "full"
	KindDelta = "delta"
	CodecZstd = "zstd"

	// CompressAbove: a body at least this long is stored zstd-compressed when
	// that makes it smaller. Below it, compression saves tens of bytes and costs
	// a decoder call on every read.
	CompressAbove = 1 << 10
)

// Stored is how a full state is written: small or incompressible states go
// to the state column as text, as every row did before compression, so that
// old and new rows read alike. Body nil means "the state is in Text".
type Stored struct {
	Text  string
	Codec string
	Body  []byte
}

// Size is the bytes the row's state takes.
func (s Stored) Size() int { return len(s.Text) + len(s.Body) }

// EncodeFull is how a full row keeps the canonical state.
func EncodeFull(state []byte) Stored {
	codec, body := EncodeBody(state)
	if codec == "" {
		return Stored{Text: string(state)}
	}
	return Stored{Codec: codec, Body: body}
}

// The encoder and decoder are made once: each holds megabytes of tables. Both
// are safe for concurrent EncodeAll and DecodeAll, and with no stream attached
// neither starts a goroutine.
var (
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault))
		if err != nil {
			panic(err) // only bad options fail, and these are constant
		}
		return e
	})
	zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
		// A damaged body must not make a read allocate without limit.
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(256<<20))
		if err != nil {
			panic(err)
		}
		return d
	})
)

// EncodeBody compresses b when it is long enough and compression pays.
func EncodeBody(b []byte) (codec string, body []byte) {
	if len(b) >= CompressAbove {
		if z := zstdEncoder().EncodeAll(b, make([]byte, 0, len(b)/2)); len(z) < len(b) {
			return CodecZstd, z
		}
	}
	return "", b
}

// DecodeBody undoes EncodeBody.
func DecodeBody(codec string, body []byte) ([]byte, error) {
	switch codec {
	case "":
		return body, nil
	case CodecZstd:
		return zstdDecoder().DecodeAll(body, nil)
	}
	return nil, fmt.Errorf("unknown codec %q", codec)
}
