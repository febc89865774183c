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
