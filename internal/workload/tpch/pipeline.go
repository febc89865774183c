package tpch

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// A task is one step of the load on one connection: a part's COPY, a
// table's VACUUM or ANALYZE, an index, a key. It runs once the tasks it
// waits for are done. C is the connection it runs on: PostgreSQL's
// tasks run on pgx (task), MariaDB's on the target's admin connections
// (load_mariadb.go).
type taskOf[C any] struct {
	name   string
	weight float64 // the larger first among those ready (about its work)
	copy   bool    // a COPY (the "generate" phase)
	// settled: once the tasks it waits for are done, it also waits for
	// the tasks running then, whose transactions began before. A VACUUM
	// marks pages all-visible only when no transaction older than their
	// rows is open.
	settled bool
	wait    int          // unfinished tasks it waits for
	then    []*taskOf[C] // tasks waiting for it
	run     func(ctx context.Context, conn C) error
}

// task is a step of the PostgreSQL load.
type task = taskOf[*pgx.Conn]

// after makes t wait for each of ts.
func (t *taskOf[C]) after(ts ...*taskOf[C]) *taskOf[C] {
	for _, p := range ts {
		p.then = append(p.then, t)
		t.wait++
	}
	return t
}

// sqlTask is a task that executes statements.
func sqlTask(weight float64, stmts ...string) *task {
	return &task{name: firstLine(stmts[0]), weight: weight, run: func(ctx context.Context, conn *pgx.Conn) error {
		for _, s := range stmts {
			if _, err := conn.Exec(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", firstLine(s), err)
			}
		}
		return nil
	}}
}

// pipeline runs tasks over a fixed number of connections, each taking the
// heaviest ready task, so that a table's vacuum and indexes start as soon
// as its data is in, beside the COPY of the others, and no core idles
// while work is left.
type pipeline[C any] struct {
	mu      sync.Mutex
	cond    *sync.Cond
	ready   []*taskOf[C]
	running map[*taskOf[C]]bool
	pending int
	copies  int // COPY tasks not done
	err     error
	// done is called (under no lock) after each task; copiesDone after the
	// last COPY.
	done       func(t *taskOf[C], n, total int)
	copiesDone func()
	finished   int
}

// runPipeline runs the PostgreSQL load's tasks on pgx connections, each
// with maintenance_work_mem raised for the index builds.
func runPipeline(ctx context.Context, connect Connector, workers int, tasks []*task, done func(t *task, n, total int), copiesDone func()) error {
	open := func(ctx context.Context) (*pgx.Conn, error) {
		conn, err := connect(ctx)
		if err != nil {
			return nil, err
		}
		// The index builds get 256MB (never less than the server's).
		if _, err := conn.Exec(ctx, raiseMaintenanceMem("256MB")); err != nil {
			conn.Close(context.WithoutCancel(ctx))
			return nil, err
		}
		return conn, nil
	}
	closeConn := func(conn *pgx.Conn) { conn.Close(context.Background()) }
	return runTasks(ctx, open, closeConn, workers, tasks, done, copiesDone)
}

// runTasks runs tasks over up to workers connections that open makes (at
// a worker's first task) and closeConn closes.
func runTasks[C any](ctx context.Context, open func(context.Context) (C, error), closeConn func(C), workers int, tasks []*taskOf[C],
	done func(t *taskOf[C], n, total int), copiesDone func()) error {
	if len(tasks) == 0 {
		copiesDone()
		return nil
	}
	p := &pipeline[C]{pending: len(tasks), done: done, copiesDone: copiesDone, running: map[*taskOf[C]]bool{}}
	p.cond = sync.NewCond(&p.mu)
	for _, t := range tasks {
		if t.copy {
			p.copies++
		}
		if t.wait == 0 {
			p.ready = append(p.ready, t)
		}
	}
	if p.copies == 0 {
		copiesDone()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.cond.Broadcast()
	})
	defer stop()
	var wg sync.WaitGroup
	for range min(workers, len(tasks)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.work(ctx, open, closeConn); err != nil {
				p.fail(err)
				cancel()
			}
		}()
	}
	wg.Wait()
	if p.err == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return p.err
}

// fail keeps the first error that is not the cancellation it caused.
func (p *pipeline[C]) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil || (isCanceled(p.err) && !isCanceled(err)) {
		p.err = err
	}
	p.cond.Broadcast()
}

func isCanceled(err error) bool { return errors.Is(err, context.Canceled) }

// next waits for a ready task; nil when all are done or the load failed.
func (p *pipeline[C]) next(ctx context.Context) *taskOf[C] {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.ready) == 0 && p.pending > 0 && p.err == nil && ctx.Err() == nil {
		p.cond.Wait()
	}
	if len(p.ready) == 0 || p.err != nil || ctx.Err() != nil {
		return nil
	}
	sort.SliceStable(p.ready, func(i, j int) bool { return p.ready[i].weight > p.ready[j].weight })
	t := p.ready[0]
	p.ready = p.ready[1:]
	p.running[t] = true
	return t
}

func (p *pipeline[C]) finish(t *taskOf[C]) {
	p.mu.Lock()
	p.pending--
	p.finished++
	delete(p.running, t)
	n, total := p.finished, p.finished+p.pending
	for _, w := range t.then {
		if w.wait--; w.wait > 0 {
			continue
		}
		if w.settled {
			for r := range p.running {
				w.after(r)
			}
			w.settled = false
		}
		if w.wait == 0 {
			p.ready = append(p.ready, w)
		}
	}
	last := false
	if t.copy {
		p.copies--
		last = p.copies == 0
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	p.done(t, n, total)
	if last {
		p.copiesDone()
	}
}

// work is one connection's loop.
func (p *pipeline[C]) work(ctx context.Context, open func(context.Context) (C, error), closeConn func(C)) error {
	var conn C
	opened := false
	defer func() {
		if opened {
			closeConn(conn)
		}
	}()
	for {
		t := p.next(ctx)
		if t == nil {
			return ctx.Err()
		}
		if !opened {
			var err error
			if conn, err = open(ctx); err != nil {
				return err
			}
			opened = true
		}
		if err := t.run(ctx, conn); err != nil {
			return err
		}
		p.finish(t)
	}
}

// tableKeys are a table's index builds and the statements that turn its
// unique indexes into primary keys.
type tableKeys struct{ indexes, pkeys []string }

// keysByTable splits keyDDL by table: a primary key is built as a unique
// index (beside the table's other indexes: CREATE INDEX does not block
// another on the same table) and then attached with USING INDEX.
func keysByTable() map[string]tableKeys {
	out := map[string]tableKeys{}
	for _, s := range keyDDL {
		var table, name, cols string
		if _, err := fmt.Sscanf(s, "alter table %s add constraint %s primary key", &table, &name); err == nil {
			cols = s[strings.Index(s, "("):]
			k := out[table]
			k.indexes = append(k.indexes, fmt.Sprintf("create unique index %s on %s %s", name, table, cols))
			k.pkeys = append(k.pkeys, fmt.Sprintf("alter table %s add constraint %s primary key using index %s", table, name, name))
			out[table] = k
			continue
		}
		if _, err := fmt.Sscanf(s, "create index %s on %s", &name, &table); err != nil {
			panic("tpch: key statement " + s)
		}
		k := out[table]
		k.indexes = append(k.indexes, s)
		out[table] = k
	}
	return out
}

// dropKeysDDL drops every key and index the load builds.
func dropKeysDDL() []string {
	var out []string
	for _, t := range loadOrder {
		out = append(out, fmt.Sprintf(`do $$ declare c record; begin
	for c in select conname from pg_constraint where conrelid = '%[1]s'::regclass and contype in ('p', 'f') loop
		execute format('alter table %[1]s drop constraint %%I cascade', c.conname);
	end loop;
	for c in select indexrelid::regclass::text as name from pg_index where indrelid = '%[1]s'::regclass loop
		execute format('drop index %%s', c.name);
	end loop;
end $$`, t))
	}
	return out
}

func analyzeDDL() []string {
	var out []string
	for _, t := range loadOrder {
		out = append(out, "analyze "+t.String())
	}
	return out
}

func execSerial(ctx context.Context, conn *pgx.Conn, stmts []string) error {
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", firstLine(s), err)
		}
	}
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// parallel runs statements over up to workers connections, in the order
// of the list.
func parallel(ctx context.Context, connect Connector, workers int, stmts []string) error {
	tasks := make([]*task, len(stmts))
	for i, s := range stmts {
		tasks[i] = sqlTask(float64(len(stmts)-i), s)
	}
	return runPipeline(ctx, connect, workers, tasks, func(*task, int, int) {}, func() {})
}

// vacuumTask is the VACUUM (ANALYZE) of a table loaded in parts. A page
// is marked all-visible only when no transaction older than its rows is
// open, so it first waits (up to settleWait) until no other session of the
// database has a snapshot or a transaction older than the parts' commits
// (l.horizon; 0: loaded by an earlier, interrupted load). The scheduler
// already runs it after the load's own steps that began before
// (task.settled); this covers the sessions of others, such as an
// autovacuum worker's ANALYZE.
func vacuumTask(weight float64, table string, l *tableLoad) *task {
	vacuum := sqlTask(weight, "vacuum (analyze) "+table)
	t := &task{name: vacuum.name, weight: weight, settled: true}
	t.run = func(ctx context.Context, conn *pgx.Conn) error {
		if l != nil {
			if h := l.horizon.Load(); h > 0 {
				if err := settle(ctx, conn, h); err != nil {
					return err
				}
			}
		}
		return vacuum.run(ctx, conn)
	}
	return t
}

// settleWait bounds the wait for older transactions: past it the VACUUM
// runs anyway (its hint bits are set; the pages older snapshots could
// still need stay not all-visible until a later vacuum).
const settleWait = 30 * time.Second

// settle waits until no other session of the database holds a snapshot
// or a transaction id older than next (a full transaction id), apart from
// autovacuum's VACUUMs (which the visibility horizon ignores).
func settle(ctx context.Context, conn *pgx.Conn, next uint64) error {
	old := strconv.FormatUint(next&0xffffffff, 10)
	deadline := time.Now().Add(settleWait)
	for {
		var n int
		err := conn.QueryRow(ctx, `select count(*) from pg_stat_activity
			where pid <> pg_backend_pid() and datname = current_database()
			and not (backend_type = 'autovacuum worker' and query like 'autovacuum: VACUUM%' and query not like '%ANALYZE%')
			and ((backend_xmin is not null and age(backend_xmin) > age($1::xid))
				or (backend_xid is not null and age(backend_xid) > age($1::xid)))`, old).Scan(&n)
		if err != nil || n == 0 || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
