// Command screenshots is the Go half of scripts/screenshots.sh, which
// makes the README's pictures from the real product:
//
//	screenshots svg [-title T] <capture >out.svg
//	    turns a terminal capture (tmux capture-pane -p -e: text with SGR
//	    colour sequences) into an SVG of a terminal window.
//	screenshots register URL
//	    opens URL, the page mcpepoch enroll --web prints, in headless
//	    Chromium with a virtual WebAuthn authenticator, presses Register
//	    and waits for the page's verdict: the script's stand-in for a
//	    person's security key. Exit status 0 only when the page says ok.
//
// The screenshot of the approval page itself is taken by chromium
// --headless --screenshot in the script.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	cdpwa "github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "svg":
		fs := flag.NewFlagSet("svg", flag.ExitOnError)
		title := fs.String("title", "", "window title")
		fs.Parse(os.Args[2:])
		in, err := io.ReadAll(os.Stdin)
		if err != nil {
			fail(err)
		}
		if _, err := os.Stdout.WriteString(SVG(string(in), *title)); err != nil {
			fail(err)
		}
	case "register":
		if len(os.Args) != 3 {
			usage()
		}
		status, err := register(os.Args[2])
		if err != nil {
			fail(err)
		}
		fmt.Println(status)
		if !strings.HasPrefix(status, "ok:") {
			os.Exit(1)
		}
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: screenshots svg [-title T] <capture >out.svg\n       screenshots register URL")
	os.Exit(2)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "screenshots:", err)
	os.Exit(1)
}

// register presses Register on the enrollment page at url in a headless
// Chromium whose virtual CTAP2 authenticator answers with user presence,
// and returns the page's final status ("ok: …" or "error: …").
func register(url string) (string, error) {
	path, err := exec.LookPath("chromium")
	if err != nil {
		return "", fmt.Errorf("chromium is not on PATH: install it (apt-get install chromium)")
	}
	dir, err := os.MkdirTemp("", "mcpepoch-screenshots-chromium-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.UserDataDir(dir))
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	defer cancelT()
	if err := chromedp.Do(ctx); err != nil {
		return "", fmt.Errorf("start chromium: %v", err)
	}
	if _, err := chromedp.Call(ctx, cdpwa.Enable, cdpwa.EnableParams{}); err != nil {
		return "", fmt.Errorf("WebAuthn.enable: %v", err)
	}
	if _, err := chromedp.Call(ctx, cdpwa.AddVirtualAuthenticator, cdpwa.AddVirtualAuthenticatorParams{
		Options: &cdpwa.VirtualAuthenticatorOptions{Protocol: cdpwa.AuthenticatorProtocolCtap2,
			Transport: cdpwa.AuthenticatorTransportUsb, HasResidentKey: true, HasUserVerification: true,
			IsUserVerified: true, AutomaticPresenceSimulation: true}}); err != nil {
		return "", fmt.Errorf("WebAuthn.addVirtualAuthenticator: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.Click(chromedp.ID("register"))); err != nil {
		return "", fmt.Errorf("registration page %s: %v", url, err)
	}
	status, err := chromedp.Run(ctx, chromedp.Poll[string](`(s => s.className ? s.className + ": " + s.textContent : false)(document.getElementById("status"))`))
	if err != nil {
		return "", fmt.Errorf("registration page %s: no verdict: %v", url, err)
	}
	return status, nil
}
