// Package browser opens pages in a real headless Chromium, with the network
// cut off, and reports what it saw: every request the page made, every
// console message and log entry, the layout of the report's timeline
// charts, and a screenshot. make verify-report drives it (browser_test.go)
// on cpid-tui report's HTML.
package browser

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"sync"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Viewport is a window to open pages in.
type Viewport struct {
	Name          string
	Width, Height int64
	Scale         float64 // device pixels per CSS pixel
	Mobile        bool    // a phone: the page's meta viewport applies
}

var (
	// Desktop is a laptop's browser window.
	Desktop = Viewport{Name: "desktop", Width: 1280, Height: 1400, Scale: 1}
	// Phone is a 390 px wide phone (an iPhone 12 to 15) at twice the
	// pixels.
	Phone = Viewport{Name: "phone", Width: 390, Height: 844, Scale: 2, Mobile: true}
)

// Start starts a headless Chromium at path that can reach no network:
// every host name resolves to nothing and every connection goes to a
// proxy at a closed port, so that a page that tried to fetch anything
// would fail, and say so. Cancel the context to stop it.
func Start(ctx context.Context, path string) (context.Context, context.CancelFunc) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // root in a container
		chromedp.DisableGPU,
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
		chromedp.Flag("proxy-server", "http://127.0.0.1:9"),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.Flag("hide-scrollbars", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	return bctx, func() { cancelBrowser(); cancelAlloc() }
}

// Page is what Chromium saw of one page in one viewport.
type Page struct {
	// Requests are the URLs the page asked for, itself first.
	Requests []string
	// Problems are console messages of level warning or error, uncaught
	// exceptions and log entries of level warning or error (a failed
	// load, a blocked request).
	Problems []string
	Layout   Layout
	// Shot is a PNG of the page from its top to the bottom of the element
	// ShotUntil named (the viewport when none).
	Shot []byte
}

// Layout is the state of the rendered page, as the DOM reports it.
type Layout struct {
	Width       int     `json:"width"`       // the viewport's, in CSS pixels
	ScrollWidth int     `json:"scrollWidth"` // the page's: wider scrolls sideways
	Charts      []Chart `json:"charts"`
	Rows        int     `json:"rows"` // rows of the write table
	ShotBottom  float64 `json:"shotBottom"`
}

// Chart is one timeline chart (svg.tl) of a report.
type Chart struct {
	Layout string  `json:"layout"` // wide or narrow
	Shown  bool    `json:"shown"`  // displayed, with a size
	Width  float64 `json:"width"`
	Marks  int     `json:"marks"` // elements with data-event
	Drawn  int     `json:"drawn"` // of them, laid out with a size
	Lanes  int     `json:"lanes"` // elements with data-lane
}

// layoutJS reads the Layout of a report; %q is the id of the element a
// screenshot ends with.
const layoutJS = `(() => {
  const charts = [...document.querySelectorAll('svg.tl')].map(s => {
    const box = s.getBoundingClientRect();
    const marks = [...s.querySelectorAll('[data-event]')];
    const drawn = marks.filter(m => { const r = m.getBoundingClientRect(); return r.width > 0 && r.height > 0; }).length;
    return {layout: s.dataset.layout || '', shown: getComputedStyle(s).display !== 'none' && box.width > 0, width: box.width,
      marks: marks.length, drawn: drawn, lanes: s.querySelectorAll('[data-lane]').length};
  });
  const until = document.getElementById(%q);
  return {width: window.innerWidth, scrollWidth: document.documentElement.scrollWidth, charts: charts,
    rows: document.querySelectorAll('tr[id^="w"]').length,
    shotBottom: until ? until.getBoundingClientRect().bottom + window.scrollY : 0};
})()`

// Open loads the HTML file in a new tab of the browser in v, and returns
// what it saw; the screenshot ends at the element of id shotUntil.
func Open(bctx context.Context, file string, v Viewport, shotUntil string) (Page, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return Page{}, err
	}
	u := (&url.URL{Scheme: "file", Path: abs}).String()
	var mu sync.Mutex
	var p Page
	tab, cancel := chromedp.NewContext(bctx, chromedp.WithListener(func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			p.Requests = append(p.Requests, ev.Request.URL)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning ||
				ev.Type == runtime.ConsoleAPICalledTypeAssert {
				msg := string(ev.Type) + ":"
				for _, a := range ev.Args {
					msg += " " + string(a.Value)
				}
				p.Problems = append(p.Problems, "console "+msg)
			}
		case *runtime.EventExceptionThrown:
			p.Problems = append(p.Problems, "exception: "+ev.ExceptionDetails.Text)
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning {
				p.Problems = append(p.Problems, fmt.Sprintf("log %s %s: %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		}
	}))
	defer cancel()
	mobile := []chromedp.EmulateViewportOption{chromedp.EmulateScale(v.Scale), chromedp.EmulatePortrait}
	if v.Mobile {
		mobile = append(mobile, chromedp.EmulateMobile, chromedp.EmulateTouch)
	}
	if err := chromedp.Do(tab,
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			if _, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{}); err != nil {
				return err
			}
			_, err := cdp.Call(ctx, t, cdplog.Enable, cdp.Empty{})
			return err
		}),
		chromedp.EmulateViewport(v.Width, v.Height, mobile...),
		chromedp.Navigate(u),
	); err != nil {
		return Page{}, fmt.Errorf("open %s: %w", file, err)
	}
	layout, err := chromedp.Run(tab, chromedp.Evaluate[Layout](fmt.Sprintf(layoutJS, shotUntil)))
	if err != nil {
		return Page{}, fmt.Errorf("layout of %s: %w", file, err)
	}
	params := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng}
	if layout.ShotBottom > 0 {
		t := true
		params.CaptureBeyondViewport = &t
		params.Clip = &page.Viewport{Width: float64(v.Width), Height: layout.ShotBottom + 24, Scale: 1}
	}
	shot, err := chromedp.Call(tab, page.CaptureScreenshot, params)
	if err != nil {
		return Page{}, fmt.Errorf("screenshot of %s: %w", file, err)
	}
	mu.Lock()
	defer mu.Unlock()
	p.Layout, p.Shot = layout, shot.Data
	return p, nil
}

// Pixels counts the pixels of a PNG within 24 of color c on each
// channel: whether something of that color was painted.
func Pixels(pngData []byte, c [3]uint8) (int, error) {
	img, err := png.Decode(bytes.NewReader(pngData))
	if err != nil {
		return 0, err
	}
	near := func(a uint32, b uint8) bool { d := int(a>>8) - int(b); return d > -24 && d < 24 }
	n := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if near(r, c[0]) && near(g, c[1]) && near(b, c[2]) {
				n++
			}
		}
	}
	return n, nil
}

// Size returns a PNG's size in pixels.
func Size(pngData []byte) (image.Point, error) {
	cfg, err := png.DecodeConfig(bytes.NewReader(pngData))
	return image.Point{X: cfg.Width, Y: cfg.Height}, err
}

// Paletted re-encodes a PNG with its 256 most frequent colors, each pixel
// the nearest of them (a screenshot of a page has few colors besides the
// edges of text): a third of the size, for the screenshots in docs/.
func Paletted(pngData []byte) ([]byte, error) {
	img, err := png.Decode(bytes.NewReader(pngData))
	if err != nil {
		return nil, err
	}
	b := img.Bounds()
	count := map[color.RGBA]int{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			count[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	colors := slices.Collect(maps.Keys(count))
	slices.SortFunc(colors, func(a, b color.RGBA) int {
		if count[a] != count[b] {
			return count[b] - count[a]
		}
		return int(uint32(a.R)<<16|uint32(a.G)<<8|uint32(a.B)) - int(uint32(b.R)<<16|uint32(b.G)<<8|uint32(b.B))
	})
	pal := make(color.Palette, 0, 256)
	for _, c := range colors[:min(256, len(colors))] {
		pal = append(pal, c)
	}
	out := image.NewPaletted(b, pal)
	draw.Draw(out, b, img, b.Min, draw.Src)
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&buf, out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
