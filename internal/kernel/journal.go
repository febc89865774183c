package kernel

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/proc"
)

// DefaultJournal is where kernel changes are journaled: under /run, which
// is emptied at boot as the kernel's settings are (a journal is also tied
// to the boot it was written in).
const DefaultJournal = "/run/tunebench/kernel-journal.json"

// JournalEnv names another journal file (tests).
const JournalEnv = "TUNEBENCH_KERNEL_JOURNAL"

// JournalPath is the journal file: $TUNEBENCH_KERNEL_JOURNAL or
// DefaultJournal.
func JournalPath(getenv func(string) string) string {
	if getenv != nil {
		if p := getenv(JournalEnv); p != "" {
			return p
		}
	}
	return DefaultJournal
}

// Holder is the process that made a change and restores it when it ends.
type Holder struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start,omitempty"` // /proc/PID/stat starttime
	What  string `json:"what,omitempty"`
}

// Self is this process as a holder.
func Self(what string) Holder {
	return Holder{PID: os.Getpid(), Start: proc.Start(os.Getpid()), What: what}
}

func (h Holder) alive() bool { return proc.Alive(h.PID, h.Start) }

func (h Holder) same(o Holder) bool {
	return h.PID == o.PID && (h.Start == 0 || o.Start == 0 || h.Start == o.Start)
}

func (h Holder) String() string {
	if h.What == "" {
		return fmt.Sprintf("pid %d", h.PID)
	}
	return fmt.Sprintf("pid %d, %s", h.PID, h.What)
}

// Entry is one journaled change: the file, the value before, the value
// written and who holds it.
type Entry struct {
	Key      string    `json:"key"`
	Path     string    `json:"path"`
	Dev      string    `json:"dev,omitempty"`
	Previous string    `json:"previous"`
	Value    string    `json:"value"`
	Holder   Holder    `json:"holder"`
	At       time.Time `json:"at"`
	// Implied: the kernel changed it with another key (a pair).
	Implied bool `json:"implied,omitempty"`
}

type journalFile struct {
	Boot    string  `json:"boot_id"`
	Entries []Entry `json:"entries"`
}

// bootID names this boot (kernel settings do not survive a reboot).
func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// Journal is the journal file, read and written under an exclusive lock
// on PATH.lock.
type Journal struct{ Path string }

// update runs f on the journal's entries under the lock and writes what f
// leaves (the file is removed when no entry is left).
func (j Journal) update(f func(entries []Entry) ([]Entry, error)) error {
	if err := os.MkdirAll(filepath.Dir(j.Path), 0o700); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "kernel journal %s", j.Path)
	}
	lf, err := os.OpenFile(j.Path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "kernel journal %s", j.Path)
	}
	defer lf.Close()
	if err := lock(lf); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "locking the kernel journal %s", j.Path)
	}
	defer unlock(lf) //nolint:errcheck // closing releases it too
	var jf journalFile
	b, err := os.ReadFile(j.Path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return errs.Wrap(errs.KindEnvironment, err, "", "reading the kernel journal")
	default:
		if err := json.Unmarshal(b, &jf); err != nil {
			return errs.Wrap(errs.KindEnvironment, err, "move it away; the kernel settings it lists may need restoring by hand", "kernel journal %s is damaged", j.Path)
		}
	}
	if boot := bootID(); jf.Boot != "" && boot != "" && jf.Boot != boot {
		jf.Entries = nil // written before a reboot: the kernel has its boot values
	}
	entries, ferr := f(jf.Entries)
	if len(entries) == 0 {
		if err := os.Remove(j.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return errors.Join(ferr, err)
		}
		return ferr
	}
	out, err := json.MarshalIndent(journalFile{Boot: bootID(), Entries: entries}, "", "  ")
	if err != nil {
		return errors.Join(ferr, err)
	}
	tmp := j.Path + ".tmp"
	if err := os.WriteFile(tmp, append(out, '\n'), 0o600); err != nil {
		return errors.Join(ferr, errs.Wrap(errs.KindEnvironment, err, "", "writing the kernel journal"))
	}
	if err := os.Rename(tmp, j.Path); err != nil {
		return errors.Join(ferr, errs.Wrap(errs.KindEnvironment, err, "", "writing the kernel journal"))
	}
	return ferr
}

// Entries lists the journal (under the lock).
func (j Journal) Entries() ([]Entry, error) {
	var out []Entry
	if _, err := os.Stat(j.Path); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	err := j.update(func(es []Entry) ([]Entry, error) {
		out = append(out, es...)
		return es, nil
	})
	return out, err
}

// write writes value to path and reads it back.
func write(path, value string) error {
	if err := os.WriteFile(path, []byte(value), 0); err != nil {
		return err
	}
	got, err := Read(path)
	if err != nil {
		return err
	}
	if got != normalize(value) {
		return fmt.Errorf("wrote %q, the kernel reads back %q", value, got)
	}
	return nil
}

// restoreOrder is the order to restore entries in: newest first, a
// queue's scheduler before everything else (switching it resets
// nr_requests, which is then restored after it).
func restoreOrder(es []Entry) []int {
	idx := make([]int, 0, len(es))
	for i := len(es) - 1; i >= 0; i-- {
		idx = append(idx, i)
	}
	sort.SliceStable(idx, func(a, b int) bool {
		return es[idx[a]].Key == QueuePrefix+"scheduler" && es[idx[b]].Key != QueuePrefix+"scheduler"
	})
	return idx
}

// RestoreLeftovers restores what holders that ended left in the journal,
// newest first, and drops their entries; it returns what it restored. An
// entry it cannot restore stays, with the error.
func (j Journal) RestoreLeftovers() ([]Entry, error) {
	if _, err := os.Stat(j.Path); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	var restored []Entry
	err := j.update(func(es []Entry) ([]Entry, error) {
		keepIdx := map[int]bool{}
		var problems []error
		for _, i := range restoreOrder(es) {
			e := es[i]
			if e.Holder.alive() {
				keepIdx[i] = true
				continue
			}
			if err := restoreEntry(e); err != nil {
				problems = append(problems, err)
				keepIdx[i] = true
				continue
			}
			if !restoreSkips(e) {
				restored = append(restored, e)
			}
		}
		var keep []Entry
		for i, e := range es {
			if keepIdx[i] {
				keep = append(keep, e)
			}
		}
		return keep, errors.Join(problems...)
	})
	return restored, err
}

func restoreEntry(e Entry) error {
	if _, err := os.Stat(e.Path); errors.Is(err, os.ErrNotExist) {
		return nil // gone (a loop device detached, an interface removed): nothing to restore
	}
	if restoreSkips(e) {
		return nil
	}
	if err := write(e.Path, e.Previous); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, fmt.Sprintf("write it by hand: echo '%s' > %s", e.Previous, e.Path),
			"restoring %s to %s", describe(e), e.Previous)
	}
	return nil
}

func describe(e Entry) string {
	if e.Dev != "" {
		return e.Key + " of " + e.Dev
	}
	return e.Key
}

// Session makes and restores the kernel changes of one holder.
type Session struct {
	Journal Journal
	Holder  Holder
	applied []Entry // in the order made
}

// Change is one change a session made, for the environment.
type Change struct {
	Key      string `json:"key"`
	Dev      string `json:"dev,omitempty"`
	Value    string `json:"value"`
	Previous string `json:"previous"`
}

// Apply writes each target (all checked by Resolve): it journals the value
// it replaces before writing, then reads it back. A file this session
// changed already keeps its first previous value. A file another live
// process holds is refused before anything is written.
func (s *Session) Apply(targets []Target) error {
	var conflict error
	err := s.Journal.update(func(es []Entry) ([]Entry, error) {
		for _, t := range targets {
			for _, e := range es {
				if e.Path == t.Path && !e.Holder.same(s.Holder) && e.Holder.alive() {
					conflict = errs.Usage("wait for it to end, or run one experiment with kernel settings at a time",
						"%s is held by another tunebench process (%s)", describe(e), e.Holder)
					return es, nil
				}
			}
		}
		for _, t := range targets {
			prev, err := Read(t.Path)
			if err != nil {
				return es, err
			}
			found := false
			for _, e := range es {
				found = found || (e.Path == t.Path && e.Holder.same(s.Holder))
			}
			if !found {
				// A leftover of a dead holder on this file: its previous
				// value is the one to restore in the end.
				for i, e := range es {
					if e.Path == t.Path {
						prev = e.Previous
						es = append(es[:i:i], es[i+1:]...)
						break
					}
				}
				e := Entry{Key: t.Key.Name, Path: t.Path, Dev: t.Dev, Previous: prev, Value: t.Value, Holder: s.Holder, At: time.Now(), Implied: t.Implied}
				es = append(es, e)
				s.applied = append(s.applied, e)
			} else {
				for i := range es {
					if es[i].Path == t.Path && es[i].Holder.same(s.Holder) {
						es[i].Value = t.Value
					}
				}
				for i := range s.applied {
					if s.applied[i].Path == t.Path {
						s.applied[i].Value = t.Value
					}
				}
			}
		}
		return es, nil
	})
	if err != nil || conflict != nil {
		return errors.Join(conflict, err)
	}
	for _, t := range targets {
		if t.Implied {
			continue
		}
		if err := write(t.Path, t.Value); err != nil {
			what := t.Key.Name
			if t.Dev != "" {
				what += " of " + t.Dev
			}
			hint := "the kernel may round or refuse some values; check the range in the kernel's documentation (Documentation/admin-guide/sysctl)"
			if t.Key.Name == "vm.nr_hugepages" {
				hint = "the kernel reserves the huge pages it finds free: ask for fewer, free memory first (sync; echo 3 > /proc/sys/vm/drop_caches; echo 1 > /proc/sys/vm/compact_memory), or reserve them at boot (hugepages= on the kernel command line)"
			}
			return errs.Wrap(errs.KindEnvironment, err, hint, "setting %s to %s", what, t.Value)
		}
	}
	return nil
}

// Changes are the session's changes in force, in the order made.
func (s *Session) Changes() []Change {
	var out []Change
	for _, e := range s.applied {
		if !e.Implied {
			out = append(out, Change{Key: e.Key, Dev: e.Dev, Value: e.Value, Previous: e.Previous})
		}
	}
	return out
}

// Restore puts back the previous values of the session's changes that
// keep selects (nil: all), newest first, and drops their journal entries.
func (s *Session) Restore(keep func(Change) bool) error {
	var problems []error
	leftIdx := map[int]bool{}
	var done []Entry
	for _, i := range restoreOrder(s.applied) {
		e := s.applied[i]
		if keep != nil && !keep(Change{Key: e.Key, Dev: e.Dev, Value: e.Value, Previous: e.Previous}) {
			leftIdx[i] = true
			continue
		}
		if err := restoreEntry(e); err != nil {
			problems = append(problems, err)
			leftIdx[i] = true
			continue
		}
		done = append(done, e)
	}
	var left []Entry
	for i, e := range s.applied {
		if leftIdx[i] {
			left = append(left, e)
		}
	}
	s.applied = left
	if len(done) > 0 {
		err := s.Journal.update(func(es []Entry) ([]Entry, error) {
			var out []Entry
			for _, e := range es {
				gone := false
				for _, d := range done {
					gone = gone || (d.Path == e.Path && d.Holder.same(e.Holder))
				}
				if !gone {
					out = append(out, e)
				}
			}
			return out, nil
		})
		problems = append(problems, err)
	}
	return errors.Join(problems...)
}
