package ckstate

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

func TestCanonical(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{ "b": 1, "a": [ 2, {"d":null,"c":1.50} ] }`, `{"a":[2,{"c":1.50,"d":null}],"b":1}`},
		{`{"n":12345678901234567890,"e":1e400}`, `{"e":1e400,"n":12345678901234567890}`},
		{`{"s":"<&>"}`, `{"s":"\u003c\u0026\u003e"}`},
	} {
		got, err := Canonical([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("Canonical(%s) = %s (%v), want %s", tc.in, got, err, tc.want)
		}
	}
	if _, err := Canonical([]byte(`{"a":`)); err == nil {
		t.Error("Canonical of broken JSON: no error")
	}
}

// The hash is part of the stored and exported format: it must not change.
func TestHashFormat(t *testing.T) {
	sum := sha256.Sum256([]byte("logbook-checkpoint-v1\n7\n42\n{\"a\":1}"))
	if got, want := Hash(7, 42, []byte(`{"a":1}`)), hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("Hash = %s, want %s", got, want)
	}
}

func TestVerify(t *testing.T) {
	c := model.Checkpoint{ID: "ckp_1", Iteration: 3, LastSeq: 2, State: model.JSON(`{"a":1}`)}
	c.SHA256 = Hash(3, 2, c.State)
	if err := Verify(c); err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]func(*model.Checkpoint){
		"state":     func(c *model.Checkpoint) { c.State = model.JSON(`{"a":2}`) },
		"iteration": func(c *model.Checkpoint) { c.Iteration++ },
		"last_seq":  func(c *model.Checkpoint) { c.LastSeq++ },
	} {
		d := c
		bad(&d)
		if e := model.AsError(Verify(d)); !IsCorrupted(e) || e.Extra["id"] != "ckp_1" {
			t.Errorf("%s changed: %v, want corrupted naming ckp_1", name, e)
		}
	}
	invalid := model.Checkpoint{ID: "ckp_2", State: model.JSON(`{`)}
	invalid.SHA256 = Hash(0, 0, invalid.State)
	if !IsCorrupted(Verify(invalid)) {
		t.Error("a state that is not JSON passes")
	}
}
