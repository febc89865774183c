package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	return &Holder{PID: os.Getpid(), Start: procStart(os.Getpid()), What: what}
}

// Alive reports whether the holder's process still runs.
func (h *Holder) Alive() bool {
	if h == nil {
		return true // the server's lifetime: never a leftover
	}
	if !processAlive(h.PID) {
		return false
	}
	state, start := procStat(h.PID)
	if state == 'Z' || state == 'X' {
		return false // killed, not yet reaped (a parent that never waits, or none)
	}
	return h.Start == 0 || start == 0 || start == h.Start
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

// procStart reads a process's start time from /proc (0 when unknown).
func procStart(pid int) uint64 {
	_, start := procStat(pid)
	return start
}

// procStat reads a process's state (field 3 of /proc/PID/stat: R, S, Z ...)
// and start time (field 22); 0 for what cannot be read.
func procStat(pid int) (state byte, start uint64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) > 0 && fields[0] != "" {
		state = fields[0][0]
	}
	if len(fields) < 20 {
		return state, 0
	}
	v, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return state, 0
	}
	return state, v
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
