// Package merge makes one run of the shards of a split run (--shard i/N,
// `tunebench results merge`): it finds the shards' stored runs in stores,
// directories and rescue files, groups them by the run they are parts
// of, and merges a group exactly: counts summed, HDR histograms merged
// (percentiles from the merged histogram, never averaged), the interval
// series put on the shards' common window through each shard's clock
// offset, the status the worst of the shards' with reasons naming the
// shard, and the workload's cross-check of the database made once on the
// merged figures (workload.ShardMerger).
package merge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/store"
)

// Part is one shard's stored run and where it was found.
type Part struct {
	// Where names the run: "PATH run ID", or the rescue file's path.
	Where string
	Path  string
	RunID int64
	Run   *results.Run
}

// Shard is the part's shard record.
func (p *Part) Shard() *results.Shard { return p.Run.Summary.Shard }

// Group is the shards of one split run found in the sources: under one
// rendezvous key, or (shards that met under none) of one workload and
// count whose windows overlap.
type Group struct {
	Key      string // the rendezvous key; "" for shards that met under none
	Workload string
	Count    int
	// Parts are by shard index: nil where no result was found.
	Parts []*Part
	// Latest is the latest start of a part (the newest group comes first).
	Latest time.Time
}

// Label names the group for people.
func (g *Group) Label() string {
	found := 0
	for _, p := range g.Parts {
		if p != nil {
			found++
		}
	}
	key := "no rendezvous key"
	if g.Key != "" {
		key = fmt.Sprintf("rendezvous %q", g.Key)
	}
	return fmt.Sprintf("%s, %d of %d shards, %s, started %s", g.Workload, found, g.Count, key, g.Latest.UTC().Format("2006-01-02 15:04:05"))
}

// Collect reads every shard run in the sources (results stores, rescue
// files, and directories searched for both) and groups them, the newest
// group first. Runs that are not shards (a merged run among them) are
// left alone. The same run found twice (a store given twice, or a copy of
// it) counts once; two different runs of one group's shard are an error
// that names both.
func Collect(ctx context.Context, sources []string, extras results.ExtraFunc) ([]*Group, error) {
	if len(sources) == 0 {
		return nil, errs.Usage("give the shards' results stores (results.db), their rescue files, or a directory holding them",
			"results merge needs the shards' results")
	}
	var files []string
	found := map[string]bool{} // files a directory search found, not given
	for _, src := range sources {
		fi, err := os.Stat(src)
		if err != nil {
			return nil, errs.Wrap(errs.KindUsage, err, "give the shards' results stores (results.db), rescue files or a directory holding them", "cannot read %s", src)
		}
		if !fi.IsDir() {
			files = append(files, src)
			continue
		}
		n := 0
		err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			if k := kindOf(p); k != "" {
				files = append(files, p)
				found[p] = true
				n++
			}
			return nil
		})
		if err != nil {
			return nil, errs.Wrap(errs.KindUsage, err, "", "cannot read the directory %s", src)
		}
		if n == 0 {
			return nil, errs.Usage("give the directory the shards wrote their results to (each shard's results.db)", "no results store or rescue file in %s", src)
		}
	}
	var parts []*Part
	seen := map[string]bool{}
	for _, f := range files {
		abs, _ := filepath.Abs(f)
		if seen[abs] {
			continue
		}
		seen[abs] = true
		ps, err := read(ctx, f, extras)
		if err != nil && found[f] && errors.Is(err, store.ErrNotAStore) {
			continue // another program's SQLite file beside the stores
		}
		if err != nil {
			return nil, err
		}
		parts = append(parts, ps...)
	}
	return group(parts)
}

// kindOf says what a file found in a directory is: "store", "rescue" or
// "" (anything else, a run.json summary among them).
func kindOf(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte("SQLite format 3\x00")):
		return "store"
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}) && strings.Contains(filepath.Base(path), ".rescue-"):
		return "rescue"
	case bytes.Contains(head, []byte(`"format":"`+store.RescueFormat+`"`)) || bytes.Contains(head, []byte(`"format": "`+store.RescueFormat+`"`)):
		return "rescue"
	}
	return ""
}

// read returns the shard runs of one file.
func read(ctx context.Context, path string, extras results.ExtraFunc) ([]*Part, error) {
	switch kindOf(path) {
	case "store":
		st, err := store.OpenReadOnly(ctx, path)
		if err != nil {
			return nil, err
		}
		defer st.Close()
		infos, err := st.ListRuns(ctx, store.ListFilter{})
		if err != nil {
			return nil, err
		}
		var out []*Part
		for _, ri := range infos {
			s := results.DecodeInfo(ri, extras)
			if s == nil || s.Shard == nil {
				continue
			}
			r, err := st.GetRun(ctx, ri.ID)
			if err != nil {
				return nil, err
			}
			run := results.Open(r, extras)
			if run.Summary == nil {
				continue
			}
			out = append(out, &Part{Where: fmt.Sprintf("%s run %d", path, ri.ID), Path: path, RunID: ri.ID, Run: run})
		}
		return out, nil
	case "rescue":
		rs, err := store.ReadRescue(path)
		if err != nil {
			return nil, err
		}
		run := results.Open(rs.Run, extras)
		if run.Summary == nil || run.Summary.Shard == nil {
			return nil, nil
		}
		return []*Part{{Where: path, Path: path, Run: run}}, nil
	}
	return nil, errs.Usage("give results stores (results.db), rescue files (*.rescue-*.json) or directories holding them",
		"%s is neither a tunebench results store nor a rescue file", path)
}

// measureStart is when a part's measurement window opened, on the
// database server's clock.
func measureStart(p *Part) time.Time {
	s := p.Run.Summary
	t := s.StartedAt
	if s.Measured != nil {
		t = t.Add(time.Duration(s.WarmupS * float64(time.Second)))
	}
	return t.Add(time.Duration(p.Shard().ClockOffsetMs * float64(time.Millisecond)))
}

// measureEnd is when it closed (server's clock).
func measureEnd(p *Part) time.Time {
	s := p.Run.Summary
	if s.Measured != nil {
		return measureStart(p).Add(time.Duration(s.DurationS * float64(time.Second)))
	}
	return s.EndedAt.Add(time.Duration(p.Shard().ClockOffsetMs * float64(time.Millisecond)))
}

// group sorts the parts into groups, the newest first.
func group(parts []*Part) ([]*Group, error) {
	sort.SliceStable(parts, func(i, j int) bool { return measureStart(parts[i]).Before(measureStart(parts[j])) })
	var groups []*Group
	byKey := map[string]*Group{}
	for _, p := range parts {
		s := p.Run.Summary
		sh := s.Shard
		var g *Group
		if sh.Rendezvous != "" {
			g = byKey[sh.Rendezvous]
		} else {
			// Without a key: the open group of the same workload and count
			// whose window this part's start falls in.
			for _, c := range groups {
				if c.Key == "" && c.Workload == s.Workload && c.Count == sh.Count && !measureStart(p).After(groupEnd(c)) {
					g = c
				}
			}
		}
		if g == nil {
			g = &Group{Key: sh.Rendezvous, Workload: s.Workload, Count: sh.Count, Parts: make([]*Part, sh.Count)}
			groups = append(groups, g)
			if sh.Rendezvous != "" {
				byKey[sh.Rendezvous] = g
			}
		}
		if g.Workload != s.Workload || g.Count != sh.Count {
			return nil, errs.Usage("give each sharded run a rendezvous key of its own (a new --rendezvous for every run)",
				"%s is shard %s of a %s run under rendezvous %q, which %s holds as a %d-shard %s run", p.Where, shardName(sh), s.Workload, sh.Rendezvous, firstWhere(g), g.Count, g.Workload)
		}
		if sh.Index < 0 || sh.Index >= g.Count {
			return nil, errs.New(errs.KindUsage, "", "%s claims shard %d of %d", p.Where, sh.Index, sh.Count)
		}
		if have := g.Parts[sh.Index]; have != nil {
			if same(have, p) {
				continue // one run seen twice (a copy of a store)
			}
			return nil, errs.Usage("give only one result of each shard (leave out the store of a shard that was run again), or merge the runs under their own rendezvous keys",
				"shard %s appears twice: %s and %s are different runs", shardName(sh), have.Where, p.Where)
		}
		g.Parts[sh.Index] = p
		if st := measureStart(p); st.After(g.Latest) {
			g.Latest = st
		}
	}
	sort.SliceStable(groups, func(i, j int) bool { return groups[i].Latest.After(groups[j].Latest) })
	return groups, nil
}

func groupEnd(g *Group) time.Time {
	var end time.Time
	for _, p := range g.Parts {
		if p != nil {
			if e := measureEnd(p); e.After(end) {
				end = e
			}
		}
	}
	return end
}

func firstWhere(g *Group) string {
	for _, p := range g.Parts {
		if p != nil {
			return p.Where
		}
	}
	return "another"
}

// same reports whether two parts are one run (a store and its copy): the
// same shard, started at the same instant, with the same figures.
func same(a, b *Part) bool {
	sa, sb := a.Run.Summary, b.Run.Summary
	return sa.StartedAt.Equal(sb.StartedAt) && sa.EndedAt.Equal(sb.EndedAt) && sa.Status == sb.Status &&
		(sa.Measured == nil) == (sb.Measured == nil) && (sa.Measured == nil || sa.Transactions == sb.Transactions)
}

func shardName(sh *results.Shard) string { return fmt.Sprintf("%d/%d", sh.Index, sh.Count) }
