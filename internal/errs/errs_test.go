package errs

import (
	"errors"
	"fmt"
	"testing"
)

func TestExitCodesDistinct(t *testing.T) {
	seen := map[int]Kind{}
	for k := KindInternal; k <= KindInterrupted; k++ {
		c := k.ExitCode()
		if prev, dup := seen[c]; dup {
			t.Fatalf("kinds %v and %v share exit code %d", prev, k, c)
		}
		seen[c] = k
	}
	if ExitCode(nil) != 0 {
		t.Fatal("nil error must exit 0")
	}
	if ExitCode(errors.New("plain")) != ExitInternal {
		t.Fatal("unclassified errors are internal")
	}
}

func TestWrappedKindAndHint(t *testing.T) {
	base := New(KindConnect, "start the server", "cannot connect")
	wrapped := fmt.Errorf("run: %w", base)
	if KindOf(wrapped) != KindConnect || ExitCode(wrapped) != ExitConnect {
		t.Fatalf("kind lost through wrapping: %v", KindOf(wrapped))
	}
	if HintOf(wrapped) != "start the server" {
		t.Fatalf("hint %q", HintOf(wrapped))
	}
	outer := Wrap(KindUsage, base, "", "config")
	if KindOf(outer) != KindUsage || HintOf(outer) != "start the server" {
		t.Fatalf("outer kind %v hint %q", KindOf(outer), HintOf(outer))
	}
	if Wrap(KindUsage, nil, "", "x") != nil {
		t.Fatal("Wrap(nil) must be nil")
	}
	if got := outer.Error(); got != "config: cannot connect" {
		t.Fatalf("message %q", got)
	}
}

func TestBrief(t *testing.T) {
	inner := fmt.Errorf("failed to connect to `user=postgres`: 127.0.0.1:5 (127.0.0.1): dial error: dial tcp 127.0.0.1:5: connect: connection refused")
	err := Wrap(KindConnect, inner, "start it", "cannot connect to postgres@127.0.0.1:5/postgres")
	if got := Brief(err); got != "cannot connect to postgres@127.0.0.1:5/postgres (connection refused)" {
		t.Errorf("Brief = %q", got)
	}
	plain := fmt.Errorf("plain: text")
	if got := Brief(plain); got != "plain: text" {
		t.Errorf("Brief of an unclassified error = %q", got)
	}
	if got := Brief(New(KindUsage, "", "only a message")); got != "only a message" {
		t.Errorf("Brief without a cause = %q", got)
	}
}
