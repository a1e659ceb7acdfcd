package ckstate

import (
	"bytes"
	"crypto/rand"
	"testing"
)

func TestCompressionThreshold(t *testing.T) {
	random := make([]byte, 4<<10)
	rand.Read(random)
	for _, tc := range []struct {
		name  string
		in    []byte
		codec string
	}{
		{"short_stays_plain", bytes.Repeat([]byte("a"), CompressAbove-1), ""},
		{"at_threshold_compresses", bytes.Repeat([]byte("a"), CompressAbove), CodecZstd},
		{"incompressible_stays_plain", random, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			codec, body := EncodeBody(tc.in)
			if codec != tc.codec {
				t.Fatalf("codec %q, want %q", codec, tc.codec)
			}
			back, err := DecodeBody(codec, body)
			if err != nil || !bytes.Equal(back, tc.in) {
				t.Fatalf("round trip: %v", err)
			}
		})
	}
	if _, err := DecodeBody("lz4", []byte("x")); err == nil {
		t.Error("an unknown codec decodes")
	}
}

// A full state goes to the text column unless compression applies, and then
// only to the body: a row's Body says which.
func TestEncodeFull(t *testing.T) {
	small := []byte(`{"a":1}`)
	if st := EncodeFull(small); st.Text != string(small) || st.Body != nil || st.Codec != "" || st.Size() != len(small) {
		t.Errorf("small: %+v", st)
	}
	large := bytes.Repeat([]byte("ab"), CompressAbove)
	st := EncodeFull(large)
	if st.Text != "" || st.Codec != CodecZstd || st.Body == nil || st.Size() != len(st.Body) {
		t.Fatalf("large: text %d codec %q body %d", len(st.Text), st.Codec, len(st.Body))
	}
	back, err := Row{Codec: st.Codec, Body: st.Body}.FullState()
	if err != nil || !bytes.Equal(back, large) {
		t.Errorf("FullState: %v", err)
	}
}
