package report

import (
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReportRendersInChromium opens the synthetic report in headless
// Chromium with networking disabled, checks that the rendered page holds
// every chart, and takes a screenshot. It is skipped when no Chromium is
// installed, unless TUNEBENCH_REPORT_ARTIFACTS is set (make
// report-screenshot): then the report and the screenshot are kept in that
// directory as build artifacts.
func TestReportRendersInChromium(t *testing.T) {
	keep := os.Getenv("TUNEBENCH_REPORT_ARTIFACTS")
	bin := findChromium()
	if bin == "" {
		if keep != "" {
			t.Fatal("TUNEBENCH_REPORT_ARTIFACTS is set but no chromium was found (apt-get install chromium)")
		}
		t.Skip("chromium not installed")
	}
	dir := keep
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r, html := writeFixtureReport(t, Options{})
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "report.png")
	os.Remove(shot)
	url := "file://" + page

	// The DOM as rendered: every chart is there as an SVG element.
	dom := runChromium(t, bin, "--dump-dom", url)
	if n := strings.Count(dom, "<svg "); n != r.ChartCount() {
		t.Errorf("rendered DOM has %d <svg> elements, want %d", n, r.ChartCount())
	}
	if !strings.Contains(dom, "Comparison with the baseline") {
		t.Error("rendered DOM lacks the comparison section")
	}

	runChromium(t, bin, "--screenshot="+shot, "--window-size=1400,4000", url)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1400 || b.Dy() != 4000 {
		t.Errorf("screenshot is %dx%d", b.Dx(), b.Dy())
	}
	if n := colours(img); n < 20 {
		t.Errorf("screenshot has %d colours: nothing rendered?", n)
	}
	if fi, _ := os.Stat(shot); fi.Size() < 50_000 {
		t.Errorf("screenshot is only %d bytes", fi.Size())
	}
	if keep != "" {
		t.Logf("report: %s\nscreenshot: %s", page, shot)
	}
}

func findChromium() string {
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// runChromium runs headless Chromium with the network cut off: no proxy
// reachable, every host name unresolvable, and, where user namespaces are
// available, a network namespace without interfaces.
func runChromium(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
		"--disable-extensions", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>", "--host-resolver-rules=MAP * ~NOTFOUND",
		"--user-data-dir=" + t.TempDir()}
	full := append(base, args...)
	name := bin
	if u, err := exec.LookPath("unshare"); err == nil && exec.Command(u, "-rn", "true").Run() == nil {
		name = u
		full = append([]string{"-rn", bin}, full...)
	}
	cmd := exec.CommandContext(ctx, name, full...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// colours counts distinct colours on a coarse grid of the image.
func colours(img image.Image) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r >> 8, g >> 8, bl >> 8, a >> 8}] = true
		}
	}
	return len(seen)
}
