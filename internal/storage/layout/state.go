package layout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/proc"
)

// record is what provisioning has made of a layout, written to
// WORKDIR/NAME.state.json before each thing is made: the loop files, the
// md array, the volume group, and the process making them. Sweep cleans up
// only what a record of a dead process lists, so a file tunebench did not
// make is never touched, and a layout another live process uses is left
// alone.
type record struct {
	PID   int      `json:"pid"`
	Start uint64   `json:"start"` // /proc/PID/stat starttime, to tell a reused pid
	Files []string `json:"files,omitempty"`
	MD    string   `json:"md,omitempty"`
	VG    string   `json:"vg,omitempty"`
}

// StopWait is how long Sweep waits for the processes it asked to end (a
// PostgreSQL server's shutdown checkpoint) before it gives up.
var StopWait = 60 * time.Second

func statePath(workDir, name string) string { return filepath.Join(workDir, name+".state.json") }

// note adds to the layout's record and writes it (nothing in a dry run).
func (m *Mounted) note(update func(r *record)) error {
	if m.o.dry() {
		return nil
	}
	if m.rec == nil {
		m.rec = &record{PID: os.Getpid(), Start: proc.Start(os.Getpid())}
	}
	update(m.rec)
	b, err := json.MarshalIndent(m.rec, "", "  ")
	if err != nil {
		return err
	}
	path := statePath(m.o.WorkDir, m.Layout.Name)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "recording layout %s", m.Layout.Name)
	}
	if err := os.Rename(tmp, path); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "recording layout %s", m.Layout.Name)
	}
	return nil
}

// ownerAlive reports whether the record's process still runs.
func (r *record) ownerAlive() bool { return proc.Alive(r.PID, r.Start) }

// Sweep cleans up what a killed run left of layout l (and its WAL layout)
// in the work directory, from the record it wrote: unmounts the mount
// point, stops the md array or removes the volume group, detaches the loop
// devices on its loop files and removes them (unless keep). A layout whose
// recording process still runs is refused; without a record nothing is
// touched. Each step is said.
func Sweep(ctx context.Context, l *Layout, o Options) error {
	if o.Run == nil {
		o.Run = ExecRunner{}
	}
	var problems []error
	for each := l; each != nil; each = each.WAL {
		path := statePath(o.WorkDir, each.Name)
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		var rec record
		if err == nil {
			err = json.Unmarshal(b, &rec)
		}
		if err != nil {
			problems = append(problems, fmt.Errorf("reading %s: %w", path, err))
			continue
		}
		if rec.PID != os.Getpid() && rec.ownerAlive() {
			return errs.New(errs.KindUsage, "wait for it to end, or give this experiment another target.managed.dir",
				"layout %s in %s is in use by another tunebench process (pid %d)", each.Name, o.WorkDir, rec.PID)
		}
		mnt := filepath.Join(o.WorkDir, each.Name+".mnt")
		if isMountPoint(mnt) {
			// A server (or fio) the killed run started there outlives it.
			if pids := proc.Under(mnt); len(pids) > 0 {
				o.logf("layout %s: stopping %d process(es) an earlier run left working on %s (pids %v)", each.Name, len(pids), mnt, pids)
				if left := proc.Terminate(ctx, pids, StopWait); len(left) > 0 {
					problems = append(problems, fmt.Errorf("processes %v still work on %s after SIGTERM and %v: stop them (kill PID)", left, mnt, StopWait))
					continue
				}
			}
		}
		if isMountPoint(mnt) {
			o.logf("layout %s: unmounting %s, left by an earlier run (pid %d)", each.Name, mnt, rec.PID)
			if err := unmount(ctx, o.Run, mnt); err != nil {
				problems = append(problems, fmt.Errorf("%w (if a PostgreSQL server still runs there, stop it: tunebench server stop --dir %s)", err, filepath.Join(mnt, "server")))
				continue
			}
		}
		if rec.MD != "" {
			if _, err := os.Stat(rec.MD); err == nil {
				o.logf("layout %s: stopping %s, left by an earlier run", each.Name, rec.MD)
				if _, err := o.Run.Run(ctx, "mdadm", "--stop", rec.MD); err != nil {
					problems = append(problems, err)
				}
			}
		}
		if rec.VG != "" {
			if _, err := os.Stat("/dev/" + rec.VG); err == nil {
				o.logf("layout %s: removing volume group %s, left by an earlier run", each.Name, rec.VG)
				if _, err := o.Run.Run(ctx, "vgremove", "-y", "-q", rec.VG); err != nil {
					problems = append(problems, err)
				}
			}
		}
		for _, img := range rec.Files {
			out, err := o.Run.Run(ctx, "losetup", "-j", img)
			if err != nil {
				problems = append(problems, err)
				continue
			}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if dev, _, ok := strings.Cut(line, ":"); ok && strings.HasPrefix(dev, "/dev/loop") {
					o.logf("layout %s: detaching %s, left by an earlier run", each.Name, dev)
					if _, err := o.Run.Run(ctx, "losetup", "-d", dev); err != nil {
						problems = append(problems, err)
					}
				}
			}
			if !each.Keep {
				if _, err := os.Stat(img); err == nil {
					o.logf("layout %s: removing the loop file %s, left by an earlier run", each.Name, img)
				}
				if err := ignoreMissing(os.Remove(img)); err != nil {
					problems = append(problems, err)
				}
			}
		}
		if len(problems) == 0 {
			os.Remove(path)
		}
	}
	if len(problems) > 0 {
		return errs.Wrap(errs.KindEnvironment, errors.Join(problems...), "see `findmnt` and `losetup -a`, and undo it by hand",
			"cleaning up what an earlier run left of layout %s", l.Name)
	}
	return nil
}
