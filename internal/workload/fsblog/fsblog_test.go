package fsblog

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// memFS is an in-memory FS that logs what the actors do.
type memFS struct {
	mu       sync.Mutex
	files    map[int64]map[string]int // blog -> file name -> size
	sizes    map[Kind][]int           // every write's size, per kind
	numbers  map[Kind][]int           // every write's file number, per kind
	attempts map[string]int           // read attempts per file name (hit or miss)
	order    map[int64][]string       // per blog, the files in the order written
}

func newMemFS() *memFS {
	return &memFS{files: map[int64]map[string]int{}, sizes: map[Kind][]int{}, numbers: map[Kind][]int{},
		attempts: map[string]int{}, order: map[int64][]string{}}
}

func (m *memFS) NewBlog(id int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files[id] == nil {
		m.files[id] = map[string]int{}
	}
	return nil
}

func (m *memFS) Write(id int64, k Kind, n, size int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.files[id]
	if b == nil {
		return fmt.Errorf("no blog %d", id)
	}
	b[FileName(k, n)] = size
	m.sizes[k] = append(m.sizes[k], size)
	m.numbers[k] = append(m.numbers[k], n)
	m.order[id] = append(m.order[id], FileName(k, n))
	return nil
}

func (m *memFS) Read(id int64, k Kind, n int) (int64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.attempts[FileName(k, n)]++
	s, ok := m.files[id][FileName(k, n)]
	return int64(s), ok, nil
}

func newActor(fs FS, bl *blogs, seed uint64) *actor {
	return &actor{fs: fs, rng: rand.New(rand.NewPCG(seed, 7)), blogs: bl, ctr: &counters{}}
}

func mean(xs []int) float64 {
	s := 0.0
	for _, x := range xs {
		s += float64(x)
	}
	return s / float64(len(xs))
}

func within(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.4f, want %.4f ± %.4f", what, got, want, tol)
	} else {
		t.Logf("%s = %.4f (expected %.4f)", what, got, want)
	}
}

func checkSizes(t *testing.T, what string, xs []int, lo, hi int) {
	t.Helper()
	for _, x := range xs {
		if x < lo || x >= hi {
			t.Fatalf("%s size %d outside [%d, %d)", what, x, lo, hi)
		}
	}
	// Uniform on [lo, hi): mean (lo+hi-1)/2; 1% of it is far beyond 5 sigma here.
	want := float64(lo+hi-1) / 2
	within(t, what+" mean size", mean(xs), want, want*0.01)
}

// Writers: 1-100 articles and 1-100 pictures per blog, blogbench's sizes,
// numbered from the highest down to 1.
func TestProportionsWriter(t *testing.T) {
	m := newMemFS()
	bl := &blogs{}
	a := newActor(m, bl, 1)
	const blogsN = 4000
	for i := 0; i < blogsN; i++ {
		if err := a.writerStep(); err != nil {
			t.Fatal(err)
		}
	}
	c := a.ctr.take()
	if c.BlogWrites != blogsN || bl.count() != blogsN {
		t.Fatalf("blog writes %d, published %d", c.BlogWrites, bl.count())
	}
	// Mean of uniform 1..100 is 50.5, sd 28.9: sd of the mean over 4000 is 0.46.
	within(t, "articles per blog", float64(c.ArticleWrites)/blogsN, 50.5, 2.5)
	within(t, "pictures per blog", float64(c.PictureWrites)/blogsN, 50.5, 2.5)
	checkSizes(t, "article", m.sizes[Article], ArticleMinSize, ArticleMaxSize)
	checkSizes(t, "picture", m.sizes[Picture], PictureMinSize, PictureMaxSize)
	if want := int64(sum(m.sizes[Article]) + sum(m.sizes[Picture])); c.BytesWritten != want {
		t.Errorf("bytes written %d, want %d", c.BytesWritten, want)
	}
	// Every count from 1 to 100 occurs; files go highest first, articles before pictures.
	seen := map[int]bool{}
	for id, files := range m.order {
		na := 0
		for _, f := range files {
			if strings.HasPrefix(f, "article-") {
				na++
			}
		}
		seen[na] = true
		for i, f := range files {
			var want string
			if i < na {
				want = FileName(Article, na-i)
			} else {
				np := len(files) - na
				want = FileName(Picture, np-(i-na))
			}
			if f != want {
				t.Fatalf("blog %d: file %d is %s, want %s", id, i, f, want)
			}
		}
	}
	if len(seen) != MaxArticles || !seen[1] || !seen[MaxArticles] {
		t.Errorf("article counts seen: %d distinct values, want all of 1..100", len(seen))
	}
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

// Rewriters: an article every time, a picture half of the time, random
// numbers 1-100.
func TestProportionsRewriter(t *testing.T) {
	m := newMemFS()
	bl := &blogs{}
	w := newActor(m, bl, 2)
	for i := 0; i < 50; i++ {
		if err := w.writerStep(); err != nil {
			t.Fatal(err)
		}
	}
	m.sizes, m.numbers = map[Kind][]int{}, map[Kind][]int{}
	r := newActor(m, bl, 3)
	const steps = 40000
	for i := 0; i < steps; i++ {
		if err := r.rewriterStep(); err != nil {
			t.Fatal(err)
		}
	}
	c := r.ctr.take()
	if c.ArticleWrites != steps {
		t.Errorf("article rewrites %d, want one per step (%d)", c.ArticleWrites, steps)
	}
	// Binomial(40000, 0.5): sd 100.
	within(t, "picture rewrites per step", float64(c.PictureWrites)/steps, 0.5, 0.0125)
	within(t, "rewritten article number mean", mean(m.numbers[Article]), 50.5, 1)
	within(t, "rewritten picture number mean", mean(m.numbers[Picture]), 50.5, 1.5)
	checkSizes(t, "rewritten article", m.sizes[Article], ArticleMinSize, ArticleMaxSize)
	checkSizes(t, "rewritten picture", m.sizes[Picture], PictureMinSize, PictureMaxSize)
	if c.BlogWrites != 0 || c.CommentWrites != 0 {
		t.Errorf("rewriter created blogs or comments: %+v", c)
	}
}

// Commenters: 1-100 comments of 2-10 KiB per visit.
func TestProportionsCommenter(t *testing.T) {
	m := newMemFS()
	bl := &blogs{}
	w := newActor(m, bl, 4)
	if err := (&actor{fs: m, rng: w.rng, blogs: bl, ctr: &counters{}}).commenterStep(); err != errNoBlog {
		t.Fatalf("commenter without blogs: %v, want errNoBlog", err)
	}
	for i := 0; i < 20; i++ {
		w.writerStep()
	}
	c := newActor(m, bl, 5)
	const steps = 4000
	for i := 0; i < steps; i++ {
		if err := c.commenterStep(); err != nil {
			t.Fatal(err)
		}
	}
	got := c.ctr.take()
	within(t, "comments per visit", float64(got.CommentWrites)/steps, 50.5, 2.5)
	checkSizes(t, "comment", m.sizes[Comment], CommentMinSize, CommentMaxSize)
}

// Readers: comments half of the time, then pictures and articles K = 1, 2,
// ... until an article is missing. Expected counts come from the tree.
func TestProportionsReader(t *testing.T) {
	m := newMemFS()
	bl := &blogs{}
	w := newActor(m, bl, 6)
	for i := 0; i < 1000; i++ {
		w.writerStep()
	}
	cm := newActor(m, bl, 7)
	for i := 0; i < 1000; i++ {
		cm.commenterStep()
	}
	// What a full visit of each blog reads.
	var arts, pics, comms float64
	run := func(files map[string]int, k Kind) int {
		n := 0
		for {
			if _, ok := files[FileName(k, n+1)]; !ok {
				return n
			}
			n++
		}
	}
	for _, files := range m.files {
		a := run(files, Article)
		arts += float64(a)
		comms += float64(run(files, Comment))
		for k := 1; k <= a+1; k++ { // picture K is tried before article K
			if _, ok := files[FileName(Picture, k)]; ok {
				pics++
			}
		}
	}
	nb := float64(len(m.files))
	arts, pics, comms = arts/nb, pics/nb, comms/nb
	m.attempts = map[string]int{}

	r := newActor(m, bl, 8)
	const steps = 20000
	for i := 0; i < steps; i++ {
		if err := r.readerStep(); err != nil {
			t.Fatal(err)
		}
	}
	c := r.ctr.take()
	if c.BlogReads != steps {
		t.Errorf("blog reads %d, want %d", c.BlogReads, steps)
	}
	if c.ArticleWrites+c.PictureWrites+c.CommentWrites != 0 {
		t.Errorf("reader wrote: %+v", c)
	}
	// Binomial(20000, 0.5): sd 0.0035.
	within(t, "visits reading comments", float64(m.attempts[FileName(Comment, 1)])/steps, 0.5, 0.02)
	if m.attempts[FileName(Article, 1)] != steps || m.attempts[FileName(Picture, 1)] != steps {
		t.Errorf("every visit walks the articles: article-1 tried %d, picture-1 %d times, want %d",
			m.attempts[FileName(Article, 1)], m.attempts[FileName(Picture, 1)], steps)
	}
	// Blogs are drawn uniformly: per-visit means match the tree's within a few %.
	within(t, "articles read per visit", float64(c.ArticleReads)/steps, arts, arts*0.03)
	within(t, "pictures read per visit", float64(c.PictureReads)/steps, pics, pics*0.03)
	within(t, "comments read per visit", float64(c.CommentReads)/steps, comms/2, comms*0.04)
}

// The blogs set hands out ids in order and draws only finished blogs.
func TestBlogsRandom(t *testing.T) {
	bl := &blogs{}
	r := rand.New(rand.NewPCG(1, 1))
	if _, ok := bl.random(r); ok {
		t.Fatal("random on an empty set")
	}
	a, b, c := bl.newID(), bl.newID(), bl.newID()
	if a != 0 || b != 1 || c != 2 {
		t.Fatalf("ids %d %d %d", a, b, c)
	}
	bl.publish(c)
	bl.publish(a)
	hits := map[int64]int{}
	for i := 0; i < 10000; i++ {
		id, _ := bl.random(r)
		hits[id]++
	}
	if hits[b] != 0 || len(hits) != 2 || hits[a] < 4800 || hits[c] < 4800 {
		t.Errorf("draws %v: want only finished blogs 0 and 2, evenly", hits)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Writers: 1, Interval: time.Second, Iterations: 1}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []Config{
		{Writers: 0, Interval: time.Second, Iterations: 1},
		{Writers: 1, Readers: -1, Interval: time.Second, Iterations: 1},
		{Writers: 1, Interval: time.Millisecond, Iterations: 1},
		{Writers: 1, Interval: time.Second, Iterations: 0},
		{Writers: 1, Readers: 20000, Interval: time.Second, Iterations: 1},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: want an error", c)
		}
	}
}

// A whole run on the in-memory tree: rows, totals and scores agree.
func TestRunMemory(t *testing.T) {
	m := newMemFS()
	cfg := Config{Writers: 2, Rewriters: 1, Commenters: 2, Readers: 4, Interval: 150 * time.Millisecond, Iterations: 3, Seed: 9}
	var rows []Interval
	res, err := Run(context.Background(), cfg, m, func(iv Interval) { rows = append(rows, iv) })
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || len(res.Intervals) != 3 || res.Interrupted {
		t.Fatalf("rows %d, intervals %d, interrupted %v", len(rows), len(res.Intervals), res.Interrupted)
	}
	var tot Counts
	prevBlogs := int64(0)
	for i, iv := range res.Intervals {
		tot.Add(iv.Counts)
		if iv.Index != i+1 || iv.Seconds <= 0 || iv.Blogs != prevBlogs+iv.BlogWrites || iv.Partial {
			t.Errorf("row %d: %+v", i, iv)
		}
		prevBlogs = iv.Blogs
	}
	if tot != res.Totals || res.WriteScore != tot.BlogWrites || res.ReadScore != tot.BlogReads {
		t.Errorf("totals %+v, sum of rows %+v, scores %d/%d", res.Totals, tot, res.WriteScore, res.ReadScore)
	}
	if res.WriteScore == 0 || res.ReadScore == 0 || tot.ArticleReads == 0 || tot.CommentWrites == 0 || tot.PictureWrites == 0 {
		t.Errorf("nothing happened: %+v", tot)
	}
	if res.Elapsed < 440*time.Millisecond || res.Elapsed > 2*time.Second {
		t.Errorf("elapsed %v for 3 x 150ms", res.Elapsed)
	}
	if h := res.Latency[OpArticleWrite]; h == nil || h.Count() == 0 {
		t.Errorf("no article_write latencies")
	}
}

func TestRunInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	cfg := Config{Writers: 1, Readers: 2, Interval: time.Second, Iterations: 30}
	t0 := time.Now()
	res, err := Run(ctx, cfg, newMemFS(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(t0) > 2*time.Second {
		t.Errorf("took %v to stop", time.Since(t0))
	}
	if !res.Interrupted || len(res.Intervals) != 1 || !res.Intervals[0].Partial || res.WriteScore == 0 {
		t.Errorf("interrupted %v, intervals %+v", res.Interrupted, res.Intervals)
	}
}

// The disk FS: atomic writes, whole reads, misses without error.
func TestDisk(t *testing.T) {
	for _, fsync := range []bool{false, true} {
		root := t.TempDir()
		d := NewDisk(root, fsync, 1)
		if err := d.NewBlog(3); err != nil {
			t.Fatal(err)
		}
		if err := d.NewBlog(3); err != nil {
			t.Errorf("NewBlog twice: %v", err)
		}
		for _, size := range []int{1, WriteChunk, WriteChunk + 1, PictureMaxSize - 1} {
			if err := d.Write(3, Picture, 7, size); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(root, "blog-3", "picture-7.jpg")
			fi, err := os.Stat(p)
			if err != nil || fi.Size() != int64(size) {
				t.Fatalf("size %d: %v %v", size, fi, err)
			}
			got, ok, err := d.Read(3, Picture, 7)
			if err != nil || !ok || got != int64(size) {
				t.Errorf("read back %d %v %v, want %d", got, ok, err, size)
			}
		}
		ents, _ := os.ReadDir(filepath.Join(root, "blog-3"))
		if len(ents) != 1 || ents[0].Name() != "picture-7.jpg" {
			t.Errorf("blog dir holds %v, want only picture-7.jpg (no .tmp left)", ents)
		}
		if _, ok, err := d.Read(3, Article, 1); ok || err != nil {
			t.Errorf("missing file: ok %v err %v", ok, err)
		}
		if _, ok, err := d.Read(99, Article, 1); ok || err != nil {
			t.Errorf("missing blog: ok %v err %v", ok, err)
		}
		if err := d.Write(42, Article, 1, 10); err == nil {
			t.Errorf("write into a missing blog: want an error")
		}
	}
}

// A short run on disk creates blogbench's layout.
func TestRunDisk(t *testing.T) {
	root := t.TempDir()
	cfg := Config{Writers: 1, Rewriters: 1, Commenters: 1, Readers: 2, Interval: 200 * time.Millisecond, Iterations: 2, Seed: 3}
	res, err := Run(context.Background(), cfg, NewDisk(root, false, cfg.Seed), nil)
	if err != nil {
		t.Fatal(err)
	}
	// A blog counts in the write score only once the writer has finished
	// it, which a loaded machine may not manage in 0.4 s: require writes,
	// and a score that counts finished blogs.
	if res.Totals.ArticleWrites == 0 || res.Totals.BytesWritten == 0 {
		t.Fatalf("nothing written: %+v", res.Totals)
	}
	if res.WriteScore != res.Totals.BlogWrites {
		t.Errorf("write score %d, blogs finished %d", res.WriteScore, res.Totals.BlogWrites)
	}
	if res.Totals.Errors != 0 {
		t.Errorf("errors: %v", res.ErrorSamples)
	}
	ents, err := os.ReadDir(filepath.Join(root, "blog-0"))
	if err != nil || len(ents) < 2 {
		t.Fatalf("blog-0: %v %v", ents, err)
	}
	for _, e := range ents {
		n := e.Name()
		if !(strings.HasPrefix(n, "article-") && strings.HasSuffix(n, ".xml") || strings.HasPrefix(n, "picture-") && strings.HasSuffix(n, ".jpg") ||
			strings.HasPrefix(n, "comment-") && strings.HasSuffix(n, ".xml") || strings.Contains(n, ".tmp")) {
			t.Errorf("unexpected file %s", n)
		}
	}
}
