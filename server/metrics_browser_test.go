package server

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// browserPage is what a real headless Chromium saw of a page: its text,
// the console messages, exceptions and log errors (failed loads), and a
// screenshot.
type browserPage struct {
	Text       string
	Errors     []string
	Screenshot []byte
}

// chromium finds Debian's chromium; under CI=true a missing one fails.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found (apt-get install chromium); CI=true requires it")
	}
	t.Skip("chromium not found (apt-get install chromium)")
	return ""
}

// loadInBrowser opens url in headless Chromium at a phone's size, driven
// over the DevTools protocol on a pipe (--remote-debugging-pipe: requests
// on fd 3, answers and events on fd 4, each a JSON message ending in NUL).
func loadInBrowser(t *testing.T, bin, url string) browserPage {
	t.Helper()
	toChrome, cmdIn, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmdOut, fromChrome, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--remote-debugging-pipe", "--user-data-dir="+t.TempDir(), "about:blank")
	cmd.ExtraFiles = []*os.File{toChrome, fromChrome} // fd 3, fd 4
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	toChrome.Close()
	fromChrome.Close()
	defer func() {
		cmdIn.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		cmdOut.Close()
	}()

	type message struct {
		ID        int             `json:"id"`
		Method    string          `json:"method"`
		Params    json.RawMessage `json:"params"`
		Result    json.RawMessage `json:"result"`
		Error     json.RawMessage `json:"error"`
		SessionID string          `json:"sessionId"`
	}
	var mu sync.Mutex
	var page browserPage
	replies := map[int]chan message{}
	loaded := make(chan struct{}, 1)
	readErr := make(chan error, 1)
	go func() {
		rd := bufio.NewReader(cmdOut)
		for {
			b, err := rd.ReadBytes(0)
			if err != nil {
				readErr <- err
				return
			}
			var m message
			if err := json.Unmarshal(b[:len(b)-1], &m); err != nil {
				readErr <- err
				return
			}
			mu.Lock()
			switch {
			case m.ID != 0:
				if ch := replies[m.ID]; ch != nil {
					ch <- m
				}
			case m.Method == "Page.loadEventFired":
				select {
				case loaded <- struct{}{}:
				default:
				}
			case m.Method == "Runtime.consoleAPICalled", m.Method == "Runtime.exceptionThrown":
				page.Errors = append(page.Errors, m.Method+": "+string(m.Params))
			case m.Method == "Log.entryAdded":
				var e struct {
					Entry struct{ Level, Text, URL string } `json:"entry"`
				}
				_ = json.Unmarshal(m.Params, &e)
				if e.Entry.Level == "error" || e.Entry.Level == "warning" {
					page.Errors = append(page.Errors, fmt.Sprintf("log %s: %s %s", e.Entry.Level, e.Entry.Text, e.Entry.URL))
				}
			}
			mu.Unlock()
		}
	}()
	nextID := 0
	call := func(session, method string, params any) json.RawMessage {
		t.Helper()
		mu.Lock()
		nextID++
		id := nextID
		ch := make(chan message, 1)
		replies[id] = ch
		mu.Unlock()
		req := map[string]any{"id": id, "method": method, "params": params}
		if session != "" {
			req["sessionId"] = session
		}
		b, _ := json.Marshal(req)
		if _, err := cmdIn.Write(append(b, 0)); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		select {
		case m := <-ch:
			if len(m.Error) > 0 {
				t.Fatalf("%s: %s", method, m.Error)
			}
			return m.Result
		case err := <-readErr:
			t.Fatalf("%s: chromium's pipe: %v", method, err)
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: no answer from chromium in 60 s", method)
		}
		return nil
	}
	var target struct{ TargetID string }
	_ = json.Unmarshal(call("", "Target.createTarget", map[string]any{"url": "about:blank"}), &target)
	var att struct{ SessionID string }
	_ = json.Unmarshal(call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}), &att)
	s := att.SessionID
	call(s, "Runtime.enable", map[string]any{})
	call(s, "Log.enable", map[string]any{})
	call(s, "Page.enable", map[string]any{})
	call(s, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 412, "height": 915, "deviceScaleFactor": 1, "mobile": true})
	call(s, "Page.navigate", map[string]any{"url": url})
	select {
	case <-loaded:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not load in 60 s", url)
	}
	var text struct {
		Result struct{ Value string } `json:"result"`
	}
	_ = json.Unmarshal(call(s, "Runtime.evaluate", map[string]any{"expression": "document.body.innerText", "returnByValue": true}), &text)
	var shot struct{ Data string }
	_ = json.Unmarshal(call(s, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}), &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	page.Text, page.Screenshot = text.Result.Value, png
	return page
}

// TestStatusPageInBrowser loads the status page in a real headless
// Chromium at a phone's width: it loads without a console message or a
// failed load, shows the topic the test created, and a screenshot is
// written for the reviewer (its path is logged).
func TestStatusPageInBrowser(t *testing.T) {
	bin := chromium(t)
	s := metricsServer(t)
	r := newTopic(t, s, "browser-topic", 3)
	r.roundTrip(produceRequest("browser-topic", 0, makeBatch(t, 4, 30), 9), 1)
	s.Metrics().Tick(time.Now())
	r.roundTrip(produceRequest("browser-topic", 1, makeBatch(t, 4, 30), 9), 2)
	s.Metrics().Tick(time.Now().Add(5 * time.Second))
	page := loadInBrowser(t, bin, "http://"+s.MetricsAddr().String()+"/")
	if len(page.Errors) > 0 {
		t.Errorf("the status page logged errors in the browser:\n%s", strings.Join(page.Errors, "\n"))
	}
	for _, want := range []string{"browser-topic", "under-replicated", "messages in"} {
		if !strings.Contains(page.Text, want) {
			t.Errorf("the page as shown lacks %q:\n%s", want, page.Text)
		}
	}
	if len(page.Screenshot) < 1000 {
		t.Fatalf("screenshot of %d bytes", len(page.Screenshot))
	}
	out := filepath.Join(os.TempDir(), "strata-status-page.png")
	if err := os.WriteFile(out, page.Screenshot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the status page: %s", out)
}

// TestBrowserCatchesPageErrors: the browser check above sees a console
// error and a failed load (a page that has both is reported).
func TestBrowserCatchesPageErrors(t *testing.T) {
	bin := chromium(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `<!DOCTYPE html><html><body>bad page<script>console.error("boom")</script><img src="/missing.png"></body></html>`)
	}))
	defer srv.Close()
	page := loadInBrowser(t, bin, srv.URL+"/")
	all := strings.Join(page.Errors, "\n")
	if !strings.Contains(all, "boom") || !strings.Contains(all, "missing.png") {
		t.Fatalf("errors seen: %q", all)
	}
}
