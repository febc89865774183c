package script

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/proc"
	"github.com/tunebench/tunebench/internal/step"
	"github.com/tunebench/tunebench/internal/target"
)

// stmtStats are one worker's results of one statement over the measured
// window.
type stmtStats struct {
	lat    *metrics.Sparse
	count  int64
	errors map[string]int64 // by SQLSTATE ("" when none)
}

// Worker is one client: it picks a script per transaction by the weights
// and interprets it, sending each SQL command as its prepared statement
// with the variables as parameters. A step is one run of a script from its
// first command to its last (pgbench's transaction). Serialization
// failures and deadlocks run the script again from the start with the
// same random draws, up to max tries.
type Worker struct {
	p    *program
	id   int
	sess target.Session
	vars *Vars
	env  Env
	// choose picks the scripts (pgbench: one generator per thread).
	choose PRNG
	// saved is the client's generator at the start of the attempt.
	saved PRNG
	buf   []byte
	query []byte // a compound command's text

	// The step in progress.
	cur    int   // script
	pc     int   // next command
	pipe   bool  // inside \startpipeline .. \endpipeline
	flight []int // commands whose replies the round trip brings
	// sent is when the round trip in flight was sent, and now when the
	// last reply came (zero once a \sleep or \shell ran since): a round
	// trip sent straight after a reply takes that time as its start, as
	// pgbench takes one clock reading per pass of a client's state
	// machine. Both are monotonic offsets (clock): a whole transaction
	// had 30 clock readings and they were a few per cent of the driver's
	// CPU.
	sent, now time.Duration
	out       step.Outcome
	retried   []string

	stats []stmtStats // by session statement
	// The step's round trips (and errors), added to stats when the step
	// ends while the run measures: the statements then count for the
	// same transactions as the executor's figures.
	timed  []timedStmt
	failed []timedStmt
}

type timedStmt struct {
	si   int
	d    time.Duration
	code string
}

// newWorker makes client id's worker and connects its session.
func newWorker(ctx context.Context, ss target.Sessions, p *program, id int) (*Worker, error) {
	w := &Worker{p: p, id: id, vars: NewVars(p.scope)}
	if p.perStmt {
		w.stats = make([]stmtStats, len(p.info))
	}
	w.env = Env{Vars: w.vars, Rand: p.clients[id], Debug: p.stderr}
	w.choose.Seed(p.seed ^ (uint64(id)+1)*0x9e3779b97f4a7c15)
	for _, d := range p.defines {
		i, _ := p.scope.Lookup(d.Name)
		w.vars.SetText(i, d.Value)
	}
	for k, v := range []int64{p.scale, int64(id), int64(p.seed), p.defSeed} {
		name := p.scope.Name(p.builtin[k])
		if _, given := p.define(name); name == varClientID || !given {
			w.vars.SetValue(p.builtin[k], Int(v))
		}
	}
	for i := range w.stats {
		w.stats[i] = stmtStats{lat: metrics.NewSparse()}
	}
	sess, err := ss.NewSession(ctx, p.spec(id))
	if err != nil {
		return nil, err
	}
	w.sess = sess
	p.columnSlots(sess)
	return w, nil
}

// Step runs one transaction: Begin, then Continue until it ends.
func (w *Worker) Step(ctx context.Context) (step.Outcome, error) {
	o, pending, err := w.begin(ctx)
	for pending && err == nil {
		if rerr := w.sess.Receive(); rerr != nil {
			o, pending, err = w.fail(ctx, rerr)
			continue
		}
		o, pending, err = w.received(ctx)
	}
	w.ended()
	return o, err
}

// Multiplex lets the executor drive the worker with others from one
// thread, unless a script blocks the thread (\sleep, \shell).
func (w *Worker) Multiplex(on bool) bool {
	if on && !w.p.mux {
		return false
	}
	return w.sess.Multiplex(on)
}

// Begin picks the script and runs it up to its first round trip.
func (w *Worker) Begin(ctx context.Context) (step.Outcome, bool, error) {
	o, pending, err := w.begin(ctx)
	if !pending {
		w.ended()
	}
	return o, pending, err
}

func (w *Worker) begin(ctx context.Context) (step.Outcome, bool, error) {
	w.timed, w.failed, w.flight = w.timed[:0], w.failed[:0], w.flight[:0]
	w.now = 0
	w.cur = w.pick()
	w.env.Script = w.cur
	w.out = step.Outcome{Op: w.p.ops[w.cur], Attempts: 1}
	if !w.sess.Ready(ctx, &w.out) {
		return w.out, false, nil
	}
	w.saved = *w.env.Rand
	w.pc, w.pipe = 0, false
	return w.run(ctx)
}

// Continue reads the reply of the round trip in flight and runs the script
// on to its next round trip or its end.
func (w *Worker) Continue(ctx context.Context) (step.Outcome, bool, error) {
	w.sess.Readable()
	var o step.Outcome
	var pending bool
	var err error
	if rerr := w.sess.Receive(); rerr != nil {
		o, pending, err = w.fail(ctx, rerr)
	} else {
		o, pending, err = w.received(ctx)
	}
	if !pending {
		w.ended()
	}
	return o, pending, err
}

// ended adds the step's statements to the results if the run measures.
func (w *Worker) ended() {
	if !w.p.measuring.Load() || !w.p.perStmt {
		return
	}
	for _, t := range w.timed {
		st := &w.stats[t.si]
		st.lat.Record(t.d)
		st.count++
	}
	for _, t := range w.failed {
		st := &w.stats[t.si]
		if st.errors == nil {
			st.errors = map[string]int64{}
		}
		st.errors[t.code]++
	}
}

// epoch is the origin of clock.
var epoch = time.Now()

// clock is the monotonic time since epoch: one clock reading (time.Now
// takes two, the wall clock's and the monotonic one).
func clock() time.Duration { return time.Since(epoch) }

// Fd is the session's descriptor (step.Multiplexed).
func (w *Worker) Fd() int { return w.sess.Fd() }

// ServerCPU is where the server side of the session last ran (step.Placed).
func (w *Worker) ServerCPU() int { return w.sess.ServerCPU() }

// Close closes the session.
func (w *Worker) Close() error { return w.sess.Close() }

// pick chooses a script by weight, as pgbench's chooseScript.
func (w *Worker) pick() int {
	if len(w.p.scripts) == 1 {
		return 0
	}
	r := int64(w.choose.Uint64Range(0, uint64(w.p.total-1)))
	i := 0
	for {
		r -= int64(w.p.scripts[i].Weight)
		i++
		if r < 0 {
			return i - 1
		}
	}
}

// received records the round trip's statements, stores their results and
// runs on.
func (w *Worker) received(ctx context.Context) (step.Outcome, bool, error) {
	cmds := w.p.scripts[w.cur].Commands
	w.now = clock()
	d := w.now - w.sent
	for k, ci := range w.flight {
		c := &cmds[ci]
		si := w.p.stmt[w.cur][ci]
		if w.p.perStmt {
			w.timed = append(w.timed, timedStmt{si: si, d: d})
		}
		if c.Store != StoreNone {
			var err error
			if c.Compound {
				err = w.storeQuery(c)
			} else {
				err = w.store(c, si, k)
			}
			if err != nil {
				return w.out, false, w.scriptErr(c, err)
			}
		}
	}
	w.flight = w.flight[:0]
	return w.run(ctx)
}

// store sets the variables from the last row of the k-th statement of
// the round trip: \gset needs exactly one row, \aset none or more.
func (w *Worker) store(c *Command, si, k int) error {
	n := w.sess.Rows(k)
	if c.Store == StoreGset && n != 1 {
		return fmt.Errorf("\\gset expected one row, got %d", n)
	}
	if n == 0 {
		return nil
	}
	row := w.sess.Row(k)
	// As pgbench: the text of each column (a NULL is the empty string).
	for col, slot := range w.p.storeSlots[si] {
		switch {
		case col >= len(row) || slot == noSlot:
		case slot == badName:
			return badColumn(c, w.p.storeNames[si][col])
		default:
			w.vars.SetText(slot, string(row[col]))
		}
	}
	return nil
}

// storeQuery stores the results of a compound command as pgbench does:
// \gset the last statement's one row, \aset the last row of every
// statement that has rows.
func (w *Worker) storeQuery(c *Command) error {
	n := w.sess.Results()
	for k := range n {
		rows := w.sess.Rows(k)
		if c.Store == StoreGset {
			if k < n-1 {
				continue
			}
			if rows != 1 {
				return fmt.Errorf("\\gset expected one row, got %d (from the last statement)", rows)
			}
		}
		if rows == 0 {
			continue
		}
		names, row := w.sess.Fields(k), w.sess.Row(k)
		for col, name := range names {
			slot := w.p.slotOf(c.Prefix + name)
			switch {
			case col >= len(row) || slot == noSlot:
			case slot == badName:
				return badColumn(c, c.Prefix+name)
			default:
				w.vars.SetText(slot, string(row[col]))
			}
		}
	}
	return nil
}

// badColumn is a stored column whose name is not a variable's.
func badColumn(c *Command, name string) error {
	meta := "\\gset"
	if c.Store == StoreAset {
		meta = "\\aset"
	}
	return hinted{fmt.Errorf("%s cannot store the column %q: it is not a variable name", meta, name),
		"name the column with AS, letters, digits and underscores, e.g. SELECT 1 AS one " + meta}
}

// hinted is a script error with its own fix.
type hinted struct {
	error
	hint string
}

// run interprets commands from pc until a round trip is sent (pending) or
// the script ends.
func (w *Worker) run(ctx context.Context) (step.Outcome, bool, error) {
	s := w.p.scripts[w.cur]
	cmds := s.Commands
	for w.pc < len(cmds) {
		c := &cmds[w.pc]
		switch c.Kind {
		case CmdSQL:
			if c.Compound {
				// Its own round trip (never in a pipeline).
				w.query = w.compoundText(w.query[:0], c)
				w.flight = append(w.flight, w.pc)
				w.pc++
				return w.send(ctx, true)
			}
			w.queue(c, w.p.prep[w.p.stmt[w.cur][w.pc]])
			w.flight = append(w.flight, w.pc)
			w.pc++
			if !w.pipe {
				return w.send(ctx, false)
			}
		case CmdSet:
			w.env.Command = w.pc + 1
			v, err := c.Expr.Eval(&w.env)
			if err != nil {
				return w.out, false, w.scriptErr(c, err)
			}
			w.vars.SetValue(c.Var, v)
			w.pc++
		case CmdIf:
			next, err := w.branch(cmds, w.pc)
			if err != nil {
				return w.out, false, w.scriptErr(&cmds[next], err)
			}
			w.pc = next
		case CmdElif, CmdElse:
			// The end of a branch taken.
			w.pc = c.End + 1
		case CmdEndif:
			w.pc++
		case CmdStartPipeline:
			w.pipe = true
			w.pc++
		case CmdSyncPipeline, CmdEndPipeline:
			w.pipe = w.pipe && c.Kind == CmdSyncPipeline
			w.pc++
			if len(w.flight) > 0 {
				return w.send(ctx, false)
			}
		case CmdSleep, CmdShell, CmdSetShell:
			w.now = 0
			var err error
			if c.Kind == CmdSleep {
				err = w.sleep(ctx, c)
			} else {
				err = w.shell(ctx, c)
			}
			if ctx.Err() != nil {
				// Interrupted (or the drain is over): the step ends as
				// any step cut short, not as a script error.
				w.sess.Lost(ctx, ctx.Err(), false, &w.out)
				return w.out, false, nil
			}
			if err != nil {
				return w.out, false, w.scriptErr(c, err)
			}
			w.pc++
		}
	}
	if w.pipe {
		return w.out, false, errs.Usage("end the pipeline with \\endpipeline on every path through the script",
			"script %s, client %d: the script ended with a pipeline open", s.Name, w.id)
	}
	w.out.Class = step.ClassOK
	if w.out.Attempts > 1 {
		w.out.Class = step.ClassRetriedOK
	}
	if w.sess.InTx() {
		// pgbench counts the transaction (the script ran to its end),
		// then aborts the client; its open block is rolled back when the
		// connection closes.
		return w.out, false, &step.Aborted{Err: errs.Usage("end every transaction the script begins (COMMIT or END) before its last command",
			"script %s, client %d: the script ended inside a transaction block (its work is rolled back; the transaction is counted, as pgbench counts it)", s.Name, w.id)}
	}
	return w.out, false, nil
}

// branch evaluates the \if (or \elif) at i and the following branches
// until one is taken, and returns the command to go on with (or, on an
// error, the command that failed).
func (w *Worker) branch(cmds []Command, i int) (int, error) {
	for {
		c := &cmds[i]
		if c.Kind == CmdElse || c.Kind == CmdEndif {
			return i + 1, nil
		}
		w.env.Command = i + 1
		v, err := c.Expr.Eval(&w.env)
		if err != nil {
			return i, err
		}
		// pgbench: a non-zero number is true, NULL false.
		if v.truth() {
			return i + 1, nil
		}
		i = c.Next
	}
}

// queue binds the statement's variables and adds session statement i to
// the round trip. A variable that nothing set is sent as NULL, as pgbench
// sends it in its prepared and extended modes.
func (w *Worker) queue(c *Command, i int) {
	for _, slot := range c.Params {
		if !w.vars.IsSet(slot) {
			w.sess.SetNull(slot)
			w.notedNull(c, slot)
			continue
		}
		w.buf, _ = w.vars.AppendText(w.buf[:0], slot)
		w.sess.SetText(slot, w.buf)
	}
	w.sess.Queue(i)
}

// notedNull says once a run, on stderr, that a statement sent a variable
// that nothing set as NULL: a \gset or \aset found no row, or the name
// is misspelt.
func (w *Worker) notedNull(c *Command, slot int) {
	if w.p.stderr == nil || w.p.nulled[slot].Swap(true) {
		return
	}
	fmt.Fprintf(w.p.stderr, "note: %s:%d: :%s was not set (a \\gset or \\aset that found no row?), so it was sent as NULL, as pgbench sends it; said once a run\n",
		w.p.scripts[w.cur].Name, c.Line, w.p.scope.Name(slot))
}

// compoundText appends a compound command's text to b, each variable's
// value written in as text, as pgbench's simple query mode does; a
// variable that nothing set stays :name (the server then says where).
func (w *Worker) compoundText(b []byte, c *Command) []byte {
	b = append(b, c.Pieces[0]...)
	for k, slot := range c.VarSlots {
		if w.vars.IsSet(slot) {
			b, _ = w.vars.AppendText(b, slot)
		} else {
			b = append(append(b, ':'), c.VarNames[k]...)
		}
		b = append(b, c.Pieces[k+1]...)
	}
	return b
}

// send sends the round trip: the queued statements, or with query the
// compound command's text.
func (w *Worker) send(ctx context.Context, query bool) (step.Outcome, bool, error) {
	w.sent = w.now
	if w.sent == 0 {
		w.sent = clock()
	}
	w.now = 0
	var err error
	if query {
		err = w.sess.SendQuery(w.query)
	} else {
		err = w.sess.Send()
	}
	if err != nil {
		return w.fail(ctx, err)
	}
	return w.out, true, nil
}

// inCommit reports whether losing the round trip in flight leaves its
// outcome unknown: it holds a COMMIT (or END), or a statement that may
// write outside a transaction block (inTx: one was open before the round
// trip; a BEGIN in it opens one).
func (w *Worker) inCommit(inTx bool) bool {
	for _, ci := range w.flight {
		for _, k := range w.p.kinds[w.p.stmt[w.cur][ci]] {
			switch {
			case k == kindCommit:
				return true
			case k == kindBegin:
				inTx = true
			case !inTx && k == kindWrite:
				return true
			}
		}
	}
	return false
}

// fail handles an error of the round trip in flight (or of its send): a
// lost connection ends the step; otherwise the transaction is rolled back,
// and a serialization failure or deadlock runs the script again from the
// start with the same draws.
func (w *Worker) fail(ctx context.Context, err error) (step.Outcome, bool, error) {
	inTx := w.sess.InTx()
	lost := w.sess.Lost(ctx, err, w.inCommit(inTx), &w.out)
	_, code := w.sess.Classify(err, false, w.out.Attempts)
	if len(w.flight) > 0 && w.p.perStmt {
		// The error is the round trip's: it counts for its first
		// statement (in a pipeline the session does not say which).
		w.failed = append(w.failed, timedStmt{si: w.p.stmt[w.cur][w.flight[0]], code: code})
	}
	w.flight = w.flight[:0]
	if lost {
		return w.out, false, nil
	}
	if w.sess.InTx() {
		if rerr := w.sess.Rollback(); rerr != nil {
			w.out.Class, w.out.SQLState = w.sess.Classify(rerr, false, w.out.Attempts)
			w.out.Class, w.out.Err = step.ClassConnError, rerr
			return w.out, false, nil
		}
	}
	if target.Retry(ctx, w.sess, err, code, w.p.maxTries, &w.out, &w.retried) {
		*w.env.Rand = w.saved
		w.pc, w.pipe = 0, false
		return w.run(ctx)
	}
	return w.out, false, nil
}

// scriptErr is an error of the script itself (an expression, a variable, a
// \gset, a shell command): the run stops, naming the command.
func (w *Worker) scriptErr(c *Command, err error) error {
	s := w.p.scripts[w.cur]
	hint := "fix the script (docs/scripts.md describes what pgbench's scripts may do)"
	if h, ok := err.(hinted); ok {
		hint = h.hint
	}
	return errs.Usage(hint, "%s:%d: %s: %v (client %d)", s.Name, c.Line, oneLine(c.Text, 80), err, w.id)
}

func oneLine(s string, n int) string {
	s = spaceRe.ReplaceAllString(strings.TrimSpace(s), " ")
	if len(s) > n {
		s = s[:n-3] + "..."
	}
	return s
}

// sleep is \sleep: it blocks the worker (the step's latency includes it,
// as in pgbench).
func (w *Worker) sleep(ctx context.Context, c *Command) error {
	n := c.SleepConst
	if c.SleepVar >= 0 {
		v, err := w.vars.Value(c.SleepVar)
		if err != nil {
			return err
		}
		if n, err = v.toInt(); err != nil {
			return fmt.Errorf("\\sleep: %v", err)
		}
	}
	d := time.Duration(n*c.SleepUnit) * time.Microsecond
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}

// shell is \shell and \setshell: the command runs with its words, a word
// :name being the variable's value (::x is the word :x); \setshell sets
// the variable to its output, an integer.
func (w *Worker) shell(ctx context.Context, c *Command) error {
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		switch slot := c.ArgSlots[i]; {
		case slot >= 0:
			if !w.vars.IsSet(slot) {
				return fmt.Errorf("undefined variable %q", a[1:])
			}
			v, err := w.vars.Text(slot)
			if err != nil {
				return err
			}
			args[i] = v
		case strings.HasPrefix(a, "::"):
			args[i] = a[1:]
		default:
			args[i] = a
		}
	}
	// As pgbench: the words, joined, are a command line of the shell (sh;
	// cmd.exe on Windows),
	// whose output goes where tunebench's goes (\setshell's standard
	// output is the value). The command is done when the shell ends, as
	// pgbench's system() and pclose() wait for it: a child it leaves in
	// the background may go on writing.
	cmd := proc.Shell(ctx, strings.Join(args, " "))
	var err error
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	if cmd.Stderr, err = passThrough(w.p.stderr, &closers); err != nil {
		return err
	}
	if c.Kind == CmdShell {
		if cmd.Stdout, err = passThrough(w.p.stdout, &closers); err != nil {
			return err
		}
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("the command failed: %v", err)
		}
		return nil
	}
	// The output up to the shell's end (a background child holding it
	// open is not waited for).
	cmd.WaitDelay = 100 * time.Millisecond
	out, err := cmd.Output()
	if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		return fmt.Errorf("the command failed: %v", err)
	}
	// The first line of the output is the value.
	line, _, _ := strings.Cut(string(out), "\n")
	v, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil {
		return fmt.Errorf("\\setshell: the command's output %q is not an integer", strings.TrimSpace(line))
	}
	w.vars.SetValue(c.Var, Int(v))
	return nil
}

// passThrough is what a shell command writes to for dst: dst itself when
// it is a file (the child writes to it directly), nothing (the null
// device) for none, else a pipe copied to dst until the last writer
// closes it, so that the command ends when the shell ends. The closers
// run once the command has started or failed to.
func passThrough(dst io.Writer, closers *[]func()) (io.Writer, error) {
	switch f := dst.(type) {
	case nil:
		return nil, nil
	case *os.File:
		return f, nil
	}
	r, wr, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("a pipe for the command's output: %v", err)
	}
	go func() {
		_, _ = io.Copy(dst, r)
		r.Close()
	}()
	*closers = append(*closers, func() { wr.Close() })
	return wr, nil
}
