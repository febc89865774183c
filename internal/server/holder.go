package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tunebench/tunebench/internal/proc"
)

// Holder is the process that changed a setting for a bounded time (a run or
// an experiment) and restores it when it ends. A setting without a holder
// lasts until the server stops (`server start --set`). A holder that is no
// longer alive left its settings behind (it was killed): they are leftovers,
// restored by the next stop, start, run or experiment on the server.
type Holder struct {
	PID int `json:"pid"`
	// Start is the process's start time in clock ticks since boot
	// (/proc/PID/stat field 22): with the pid it names one process, also
	// after the pid is reused. 0 when unknown.
	Start uint64 `json:"start,omitempty"`
	// What is the holder's command line, for messages.
	What string `json:"what,omitempty"`
}

// self is the holder of the current process.
func self() *Holder {
	what := filepath.Base(os.Args[0])
	for i, a := range os.Args[1:] {
		if i == 3 || strings.HasPrefix(a, "-") {
			break
		}
		what += " " + a
	}
	return &Holder{PID: os.Getpid(), Start: proc.Start(os.Getpid()), What: what}
}

// Alive reports whether the holder's process still runs.
func (h *Holder) Alive() bool {
	if h == nil {
		return true // the server's lifetime: never a leftover
	}
	return proc.Alive(h.PID, h.Start)
}

// Same reports whether h and o are the same process.
func (h *Holder) Same(o *Holder) bool {
	if h == nil || o == nil {
		return h == nil && o == nil
	}
	return h.PID == o.PID && (h.Start == 0 || o.Start == 0 || h.Start == o.Start)
}

func (h *Holder) String() string {
	if h == nil {
		return "server start --set"
	}
	if h.What == "" {
		return fmt.Sprintf("pid %d", h.PID)
	}
	return fmt.Sprintf("pid %d, %s", h.PID, h.What)
}

// leftovers are the applied settings whose holder has ended.
func leftovers(applied []Applied) []Applied {
	var out []Applied
	for _, a := range applied {
		if !a.Holder.Alive() {
			out = append(out, a)
		}
	}
	return out
}

// without returns applied minus the entries in drop (same name and holder).
func without(applied, drop []Applied) []Applied {
	var out []Applied
	for _, a := range applied {
		gone := false
		for _, d := range drop {
			if d.Name == a.Name && d.Holder.Same(a.Holder) {
				gone = true
				break
			}
		}
		if !gone {
			out = append(out, a)
		}
	}
	return out
}

// holders names the holders of applied settings, for messages.
func holders(applied []Applied) string {
	seen := map[string]bool{}
	var out []string
	for _, a := range applied {
		if h := a.Holder.String(); !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return strings.Join(out, "; ")
}

// Describe lists applied settings with their holders, for messages.
func Describe(applied []Applied) string {
	parts := make([]string, len(applied))
	for i, a := range applied {
		parts[i] = fmt.Sprintf("%s (%s)", a.Name, a.Holder)
	}
	return strings.Join(parts, ", ")
}
