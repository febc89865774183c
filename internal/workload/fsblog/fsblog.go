// Package fsblog is a blogbench-like filesystem workload: a growing set of
// blog directories, each holding articles, pictures and comment files.
// Writers create new blogs, rewriters replace existing articles and
// pictures, commenters post comments and readers read whole blogs, all at
// once and without pauses, with blogbench's counts and file sizes:
//
//   - a writer creates blog-N with 1-100 articles (article-K.xml, 1-32 KiB)
//     and 1-100 pictures (picture-K.jpg, 8-64 KiB), files numbered from the
//     highest down to 1, so a reader walking from 1 sees a blog's files only
//     when they are all there;
//   - a rewriter picks a random blog and replaces a random picture (1-100)
//     half of the time, then a random article (1-100) every time;
//   - a commenter picks a random blog and writes comments n..1 (n in 1-100,
//     comment-K.xml, 2-10 KiB), replacing any comments of the same number;
//   - a reader picks a random blog; half of the time it reads its comments
//     from 1 until one is missing; then it walks K = 1, 2, ... reading
//     picture-K (counted when present) and article-K, until an article is
//     missing.
//
// Every file is written in 8 KiB chunks to a temporary NAME.tmpN and renamed
// over NAME;
// reads go in 64 KiB chunks, as blogbench 1.1 read (later blogbench releases
// read 8 bytes at a time by mistake, so their read scores are not
// comparable). Blogbench never fsyncs; Config.Fsync makes every file (and
// its directory entry) durable before it counts.
//
// The actors work on an FS, so the choices they make can be tested without
// a disk. Nothing here prints.
package fsblog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tunebench/tunebench/internal/metrics"
)

// Counts and sizes (bytes) from blogbench.
const (
	MaxArticles    = 100
	ArticleMinSize = 1024
	ArticleMaxSize = 32768
	MaxPictures    = 100
	PictureMinSize = 8192
	PictureMaxSize = 65536
	MaxComments    = 100
	CommentMinSize = 2048
	CommentMaxSize = 10240
	WriteChunk     = 8192  // bytes per write(2) when creating a file
	ReadChunk      = 65536 // bytes per read(2), as blogbench 1.1
)

// Defaults, as blogbench's.
const (
	DefaultWriters    = 3
	DefaultRewriters  = 1
	DefaultReaders    = 100
	DefaultCommenters = 5
	DefaultInterval   = 10 * time.Second
	DefaultIterations = 30
)

// Kind is a kind of file in a blog.
type Kind uint8

// File kinds.
const (
	Article Kind = iota
	Picture
	Comment
)

func (k Kind) String() string {
	switch k {
	case Article:
		return "article"
	case Picture:
		return "picture"
	default:
		return "comment"
	}
}

// FileName is the name of file n of kind k inside a blog directory.
func FileName(k Kind, n int) string {
	switch k {
	case Article:
		return fmt.Sprintf("article-%d.xml", n)
	case Picture:
		return fmt.Sprintf("picture-%d.jpg", n)
	default:
		return fmt.Sprintf("comment-%d.xml", n)
	}
}

// BlogName is the directory name of blog id.
func BlogName(id int64) string { return fmt.Sprintf("blog-%d", id) }

// Operation names: histogram ops and per-op counters.
const (
	OpBlogWrite    = "blog_write" // a writer's whole blog
	OpBlogRead     = "blog_read"  // a reader's whole visit of one blog
	OpArticleWrite = "article_write"
	OpPictureWrite = "picture_write"
	OpCommentWrite = "comment_write"
	OpArticleRead  = "article_read"
	OpPictureRead  = "picture_read"
	OpCommentRead  = "comment_read"
)

// Ops lists the operations in display order.
func Ops() []string {
	return []string{OpBlogWrite, OpBlogRead, OpArticleWrite, OpArticleRead, OpPictureWrite, OpPictureRead, OpCommentWrite, OpCommentRead}
}

// FS is the tree the actors work on.
type FS interface {
	// NewBlog creates the directory of blog id.
	NewBlog(id int64) error
	// Write replaces file n of kind k in blog id with size bytes, atomically:
	// a temporary file written in WriteChunk chunks, then renamed.
	Write(id int64, k Kind, n, size int) error
	// Read reads file n of kind k in blog id whole in ReadChunk chunks and
	// returns its size; exists is false (and err nil) when it does not exist.
	Read(id int64, k Kind, n int) (size int64, exists bool, err error)
}

// Counts are operation counts over some span.
type Counts struct {
	BlogWrites    int64 `json:"blog_writes"` // blogs created
	BlogReads     int64 `json:"blog_reads"`  // blogs read
	ArticleReads  int64 `json:"article_reads"`
	ArticleWrites int64 `json:"article_writes"`
	PictureReads  int64 `json:"picture_reads"`
	PictureWrites int64 `json:"picture_writes"`
	CommentReads  int64 `json:"comment_reads"`
	CommentWrites int64 `json:"comment_writes"`
	BytesRead     int64 `json:"bytes_read"`
	BytesWritten  int64 `json:"bytes_written"`
	Errors        int64 `json:"errors"`
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.BlogWrites += o.BlogWrites
	c.BlogReads += o.BlogReads
	c.ArticleReads += o.ArticleReads
	c.ArticleWrites += o.ArticleWrites
	c.PictureReads += o.PictureReads
	c.PictureWrites += o.PictureWrites
	c.CommentReads += o.CommentReads
	c.CommentWrites += o.CommentWrites
	c.BytesRead += o.BytesRead
	c.BytesWritten += o.BytesWritten
	c.Errors += o.Errors
}

const (
	cBlogWrites = iota
	cBlogReads
	cArticleReads
	cArticleWrites
	cPictureReads
	cPictureWrites
	cCommentReads
	cCommentWrites
	cBytesRead
	cBytesWritten
	cErrors
	nCounters
)

// counters are shared by all actors; take swaps them to zero.
type counters struct{ c [nCounters]atomic.Int64 }

func (c *counters) take() Counts {
	g := func(i int) int64 { return c.c[i].Swap(0) }
	return Counts{
		BlogWrites: g(cBlogWrites), BlogReads: g(cBlogReads),
		ArticleReads: g(cArticleReads), ArticleWrites: g(cArticleWrites),
		PictureReads: g(cPictureReads), PictureWrites: g(cPictureWrites),
		CommentReads: g(cCommentReads), CommentWrites: g(cCommentWrites),
		BytesRead: g(cBytesRead), BytesWritten: g(cBytesWritten), Errors: g(cErrors),
	}
}

// blogs is the set of blogs: ids are handed out in order; a blog becomes
// visible to the other actors once its writer has finished it.
type blogs struct {
	next atomic.Int64
	mu   sync.RWMutex
	done []int64
}

func (b *blogs) newID() int64 { return b.next.Add(1) - 1 }

func (b *blogs) publish(id int64) {
	b.mu.Lock()
	b.done = append(b.done, id)
	b.mu.Unlock()
}

// random picks a finished blog uniformly; false when there is none yet.
func (b *blogs) random(r *rand.Rand) (int64, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if len(b.done) == 0 {
		return 0, false
	}
	return b.done[r.IntN(len(b.done))], true
}

func (b *blogs) count() int64 {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return int64(len(b.done))
}

// latencies holds one histogram per operation, shared by the actors.
type latencies struct {
	mu sync.Mutex
	h  map[string]*metrics.Hist
}

func newLatencies() *latencies {
	l := &latencies{h: map[string]*metrics.Hist{}}
	for _, op := range Ops() {
		l.h[op] = metrics.NewHist()
	}
	return l
}

func (l *latencies) record(op string, d time.Duration) {
	l.mu.Lock()
	l.h[op].Record(d)
	l.mu.Unlock()
}

// errNoBlog means no blog is finished yet: the actor waits a little.
var errNoBlog = errors.New("no blog yet")

// errStopped means the run ended while an actor was mid-way.
var errStopped = errors.New("stopped")

// actor is one writer, rewriter, commenter or reader. Its random choices
// come from its own generator, so they are testable without a disk.
type actor struct {
	fs    FS
	rng   *rand.Rand
	blogs *blogs
	ctr   *counters
	lat   *latencies   // nil: no latency recording
	stop  *atomic.Bool // set when the measurement ends; work finished later is not counted
}

func (a *actor) stopped() bool { return a.stop != nil && a.stop.Load() }

func (a *actor) add(i int, n int64) {
	if !a.stopped() {
		a.ctr.c[i].Add(n)
	}
}

func (a *actor) timed(op string, t0 time.Time) {
	if a.lat != nil && !a.stopped() {
		a.lat.record(op, time.Since(t0))
	}
}

// size draws a file size in [min, max), as blogbench does.
func (a *actor) size(min, max int) int { return min + a.rng.IntN(max-min) }

func (a *actor) write(id int64, k Kind, n, size int, op string, counter int) error {
	t0 := time.Now()
	if err := a.fs.Write(id, k, n, size); err != nil {
		return fmt.Errorf("writing %s/%s: %w", BlogName(id), FileName(k, n), err)
	}
	a.timed(op, t0)
	a.add(counter, 1)
	a.add(cBytesWritten, int64(size))
	return nil
}

func (a *actor) read(id int64, k Kind, n int, op string, counter int) (bool, error) {
	t0 := time.Now()
	size, ok, err := a.fs.Read(id, k, n)
	if err != nil {
		return false, fmt.Errorf("reading %s/%s: %w", BlogName(id), FileName(k, n), err)
	}
	if !ok {
		return false, nil
	}
	a.timed(op, t0)
	a.add(counter, 1)
	a.add(cBytesRead, size)
	return true, nil
}

// writerStep creates one blog: articles, then pictures, each numbered from
// the highest down to 1.
func (a *actor) writerStep() error {
	t0 := time.Now()
	id := a.blogs.newID()
	if err := a.fs.NewBlog(id); err != nil {
		return fmt.Errorf("creating %s: %w", BlogName(id), err)
	}
	for n := 1 + a.rng.IntN(MaxArticles); n >= 1; n-- {
		if a.stopped() {
			return errStopped
		}
		if err := a.write(id, Article, n, a.size(ArticleMinSize, ArticleMaxSize), OpArticleWrite, cArticleWrites); err != nil {
			return err
		}
	}
	for n := 1 + a.rng.IntN(MaxPictures); n >= 1; n-- {
		if a.stopped() {
			return errStopped
		}
		if err := a.write(id, Picture, n, a.size(PictureMinSize, PictureMaxSize), OpPictureWrite, cPictureWrites); err != nil {
			return err
		}
	}
	a.blogs.publish(id)
	a.timed(OpBlogWrite, t0)
	a.add(cBlogWrites, 1)
	return nil
}

// rewriterStep replaces a random picture half of the time, then a random
// article (blogbench's rewriter does both when its coin says picture).
func (a *actor) rewriterStep() error {
	id, ok := a.blogs.random(a.rng)
	if !ok {
		return errNoBlog
	}
	if a.rng.IntN(2) == 0 {
		if err := a.write(id, Picture, 1+a.rng.IntN(MaxPictures), a.size(PictureMinSize, PictureMaxSize), OpPictureWrite, cPictureWrites); err != nil {
			return err
		}
	}
	return a.write(id, Article, 1+a.rng.IntN(MaxArticles), a.size(ArticleMinSize, ArticleMaxSize), OpArticleWrite, cArticleWrites)
}

// commenterStep writes comments n..1 to a random blog.
func (a *actor) commenterStep() error {
	id, ok := a.blogs.random(a.rng)
	if !ok {
		return errNoBlog
	}
	for n := 1 + a.rng.IntN(MaxComments); n >= 1; n-- {
		if a.stopped() {
			return errStopped
		}
		if err := a.write(id, Comment, n, a.size(CommentMinSize, CommentMaxSize), OpCommentWrite, cCommentWrites); err != nil {
			return err
		}
	}
	return nil
}

// readerStep reads one random blog: its comments half of the time, then
// pictures and articles K = 1, 2, ... until an article is missing.
func (a *actor) readerStep() error {
	id, ok := a.blogs.random(a.rng)
	if !ok {
		return errNoBlog
	}
	t0 := time.Now()
	if a.rng.IntN(2) == 0 {
		for n := 1; ; n++ {
			if a.stopped() {
				return errStopped
			}
			ok, err := a.read(id, Comment, n, OpCommentRead, cCommentReads)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
		}
	}
	for n := 1; ; n++ {
		if a.stopped() {
			return errStopped
		}
		if _, err := a.read(id, Picture, n, OpPictureRead, cPictureReads); err != nil {
			return err
		}
		ok, err := a.read(id, Article, n, OpArticleRead, cArticleReads)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
	}
	a.timed(OpBlogRead, t0)
	a.add(cBlogReads, 1)
	return nil
}

// Role is what an actor does.
type Role uint8

// Roles.
const (
	Writer Role = iota
	Rewriter
	Commenter
	Reader
)

func (r Role) String() string {
	return [...]string{"writer", "rewriter", "commenter", "reader"}[r]
}

func (a *actor) step(r Role) error {
	switch r {
	case Writer:
		return a.writerStep()
	case Rewriter:
		return a.rewriterStep()
	case Commenter:
		return a.commenterStep()
	default:
		return a.readerStep()
	}
}

// Config is one run.
type Config struct {
	Writers, Rewriters, Commenters, Readers int
	Interval                                time.Duration // between output rows
	Iterations                              int           // rows; the run lasts Iterations x Interval
	Fsync                                   bool          // recorded; the FS does the syncing (see NewDisk)
	Seed                                    int64
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Writers < 1:
		return fmt.Errorf("writers %d: give 1 or more (readers, rewriters and commenters need blogs)", c.Writers)
	case c.Rewriters < 0 || c.Commenters < 0 || c.Readers < 0:
		return errors.New("rewriters, commenters and readers must not be negative")
	case c.Writers+c.Rewriters+c.Commenters+c.Readers > 10000:
		return errors.New("more than 10000 actors in total")
	case c.Interval < 100*time.Millisecond:
		return fmt.Errorf("interval %v: give 100ms or more", c.Interval)
	case c.Iterations < 1:
		return fmt.Errorf("iterations %d: give 1 or more", c.Iterations)
	}
	return nil
}

// Interval is one output row: blogbench's columns over one interval.
type Interval struct {
	Index   int     `json:"index"` // 1-based
	EndS    float64 `json:"end_s"` // seconds since the start
	Seconds float64 `json:"seconds"`
	Blogs   int64   `json:"blogs"` // blogs created so far (cumulative, like blogbench's first column)
	Counts          // operations finished in this interval
	Partial bool    `json:"partial,omitempty"` // cut short by an interrupt
}

// Rate is n per second over the interval.
func (iv Interval) Rate(n int64) float64 {
	if iv.Seconds <= 0 {
		return 0
	}
	return float64(n) / iv.Seconds
}

// Result is a whole run.
type Result struct {
	Intervals    []Interval
	Totals       Counts // sum of the intervals
	WriteScore   int64  // blogs created (blogbench's final write score)
	ReadScore    int64  // blogs read (blogbench's final read score)
	Blogs        int64  // blogs in the tree at the end (finished ones)
	Latency      map[string]*metrics.Hist
	ErrorSamples []string // the first few errors
	Interrupted  bool
	StartedAt    time.Time
	EndedAt      time.Time
	Elapsed      time.Duration // measured time: the intervals
}

const maxErrorSamples = 5

// Run runs the workload on fs for cfg.Iterations intervals, calling
// onInterval (may be nil) after each. When ctx is cancelled it stops early,
// returns what was done with the last, partial interval and Interrupted
// set. Errors of single operations are counted (Counts.Errors, with samples)
// and the actor pauses 1 s as blogbench does; they do not stop the run.
func Run(ctx context.Context, cfg Config, fs FS, onInterval func(Interval)) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	seed := uint64(cfg.Seed)
	bl := &blogs{}
	ctr := &counters{}
	lat := newLatencies()
	var stop atomic.Bool
	quit := make(chan struct{})
	var samplesMu sync.Mutex
	var samples []string

	var wg sync.WaitGroup
	spawn := func(role Role, n int) {
		for i := 0; i < n; i++ {
			a := &actor{fs: fs, rng: rand.New(rand.NewPCG(seed, uint64(role)<<32|uint64(i))), blogs: bl, ctr: ctr, lat: lat, stop: &stop}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					err := a.step(role)
					switch {
					case err == nil, errors.Is(err, errStopped):
					case errors.Is(err, errNoBlog):
						pause(quit, 10*time.Millisecond)
					default:
						if !stop.Load() {
							ctr.c[cErrors].Add(1)
							samplesMu.Lock()
							if len(samples) < maxErrorSamples {
								samples = append(samples, role.String()+": "+err.Error())
							}
							samplesMu.Unlock()
						}
						pause(quit, time.Second)
					}
				}
			}()
		}
	}

	// One OS thread per actor, scheduled by the kernel like blogbench's
	// pthreads: with GOMAXPROCS at the number of cores, 100 readers reading
	// from the page cache keep every P busy, and a writer whose P is taken
	// while it is in a system call waits behind all of them.
	if n := cfg.Writers + cfg.Rewriters + cfg.Commenters + cfg.Readers; n > runtime.GOMAXPROCS(0) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	}
	res := &Result{StartedAt: time.Now()}
	start := time.Now()
	spawn(Writer, cfg.Writers)
	spawn(Rewriter, cfg.Rewriters)
	spawn(Commenter, cfg.Commenters)
	spawn(Reader, cfg.Readers)

	last := time.Duration(0)
	finish := func(iv Interval) {
		res.Intervals = append(res.Intervals, iv)
		res.Totals.Add(iv.Counts)
		if onInterval != nil {
			onInterval(iv)
		}
	}
	blogsSoFar := int64(0)
	timer := time.NewTimer(cfg.Interval)
	defer timer.Stop()
	for i := 1; i <= cfg.Iterations; i++ {
		deadline := time.Duration(i) * cfg.Interval
		timer.Reset(time.Until(start.Add(deadline)))
		select {
		case <-timer.C:
		case <-ctx.Done():
			res.Interrupted = true
		}
		if res.Interrupted {
			break
		}
		if i == cfg.Iterations {
			stop.Store(true) // nothing finished after the last row counts
		}
		now := time.Since(start)
		c := ctr.take()
		blogsSoFar += c.BlogWrites
		finish(Interval{Index: i, EndS: now.Seconds(), Seconds: (now - last).Seconds(), Blogs: blogsSoFar, Counts: c})
		last = now
	}
	if res.Interrupted {
		stop.Store(true)
		now := time.Since(start)
		c := ctr.take()
		blogsSoFar += c.BlogWrites
		if now-last > 0 {
			finish(Interval{Index: len(res.Intervals) + 1, EndS: now.Seconds(), Seconds: (now - last).Seconds(), Blogs: blogsSoFar, Counts: c, Partial: true})
			last = now
		}
	}
	close(quit)
	wg.Wait()
	res.Elapsed = last
	res.EndedAt = res.StartedAt.Add(last)
	res.WriteScore = res.Totals.BlogWrites
	res.ReadScore = res.Totals.BlogReads
	res.Blogs = bl.count()
	res.Latency = lat.h
	res.ErrorSamples = samples
	return res, nil
}

// pause sleeps d or until quit is closed.
func pause(quit <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-quit:
	}
}
