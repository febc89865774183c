package pg

import (
	"context"

	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/target"
)

// Settings are changed with ALTER SYSTEM, validated against pg_settings,
// made effective with a reload or (on a managed server) a restart as
// pg_settings.context needs, and verified (package server).
func (t *Target) Settings() target.Settings { return settings{t} }

type settings struct{ t *Target }

// Parse checks name=value (names lowered, as PostgreSQL treats them).
func (settings) Parse(kv string) (target.Setting, error) {
	s, err := server.ParseSetting(kv)
	if err != nil {
		return target.Setting{}, err
	}
	return target.Setting{Name: s.Name, Value: s.Value}, nil
}

// Check validates the settings without changing anything: against
// pg_settings, and on a managed server also the shared memory they need
// against the machine's memory.
func (s settings) Check(ctx context.Context, list []target.Setting) error {
	t := s.t
	if t.srv != nil {
		return t.srv.Check(ctx, serverSettings(list))
	}
	return server.Check(ctx, t.conn.Connect, t.restart(), serverSettings(list), 0)
}

// Apply applies and verifies the settings. On a managed server each change
// is journaled in its directory (held by this process, restored by the
// server's next stop, start, run or experiment if the process dies). On an
// owned target (an experiment's) they stay applied until Close; for a
// server given by connection string they are kept in memory.
func (s settings) Apply(ctx context.Context, list []target.Setting) (target.Change, error) {
	t := s.t
	ss := serverSettings(list)
	var done []server.Applied
	var err error
	switch {
	case t.srv != nil:
		// Journaled in the server's directory before each change, and
		// undone in its files when the server does not come back.
		done, err = t.srv.Apply(ctx, ss)
	default:
		done, err = server.Apply(ctx, t.conn.Connect, t.restart(), ss)
		if t.owned {
			t.pending = mergeFirst(t.pending, done)
		}
	}
	if err != nil {
		return nil, err
	}
	return &change{t: t, applied: done}, nil
}

type change struct {
	t       *Target
	applied []server.Applied
}

func (c *change) Values() map[string]string {
	if len(c.applied) == 0 {
		return nil
	}
	m := map[string]string{}
	for _, a := range c.applied {
		m[a.Name] = a.Value
	}
	return m
}

func (c *change) Restarted() bool {
	for _, a := range c.applied {
		if a.NeededRestart {
			return true
		}
	}
	return false
}

// Restore puts the previous values back. An owned target restores at Close
// instead (an experiment keeps its settings between the runs of a
// configuration), so there it does nothing.
func (c *change) Restore(ctx context.Context) error {
	if len(c.applied) == 0 || c.t.owned {
		return nil
	}
	if c.t.srv != nil {
		return c.t.srv.Release(ctx, c.applied)
	}
	// Whatever deadline the caller gave, the restore may take what a
	// restart with the user's command is allowed.
	r := c.t.restart()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), server.RestoreBudget(r))
	defer cancel()
	return server.Restore(rctx, c.t.conn.Connect, r, c.applied)
}

// mergeFirst adds done to old, keeping the first previous value of a
// setting applied twice (that is the one to restore).
func mergeFirst(old, done []server.Applied) []server.Applied {
	for _, d := range done {
		found := false
		for _, o := range old {
			found = found || o.Name == d.Name
		}
		if !found {
			old = append(old, d)
		}
	}
	return old
}

// RestoreSettings puts back every setting applied through an owned target
// since it opened (as Close does) and leaves the server running
// (target.SettingsRestorer).
func (t *Target) RestoreSettings(ctx context.Context) (bool, error) {
	if !t.owned {
		return false, nil
	}
	switch {
	case t.srv != nil:
		restarted := false
		for _, a := range t.srv.AppliedSettings() {
			restarted = restarted || a.NeededRestart
		}
		return restarted, t.srv.Release(ctx, nil)
	case len(t.pending) > 0:
		restarted := false
		for _, a := range t.pending {
			restarted = restarted || a.NeededRestart
		}
		if err := server.Restore(ctx, t.conn.Connect, t.restarter, t.pending); err != nil {
			return false, err
		}
		t.pending = nil
		return restarted, nil
	}
	return false, nil
}

// Notes say what PostgreSQL's figures mean where other databases' differ
// (target.Noter).
func (t *Target) Notes() []envinfo.Note {
	return []envinfo.Note{
		{Topic: envinfo.NoteIsolation, Text: "read committed by default (default_transaction_isolation), unless the workload or the settings choose another level"},
		{Topic: envinfo.NoteTransactions, Text: "xact_commit + xact_rollback of the benchmark database in pg_stat_database: every transaction, autocommitted statements included, of that database only"},
	}
}
