//go:build !linux

package treewatch

import (
	"errors"
	"io/fs"
	"os"
)

// notifications: none used here (package doc: kqueue needs a descriptor
// per file); every Digest walks.
const notifications = false

func localFS(string) (string, bool) { return "", false }

func device(fs.FileInfo) uint64 { return 0 }

func links(fs.FileInfo) uint64 { return 1 }

func sweepBarriers() {}

// mountTable: without notifications every tree is walked at every call,
// so a mount over a file is seen without a mount table.
func mountTable() (string, bool) { return "", false }

// mountWatch: no mount table to watch.
type mountWatch struct{}

func (*mountWatch) changed() bool { return true }
func (*mountWatch) close()        {}

// inotify: none here; New never opens one.
type inotify struct{ f *os.File }

var errNoNotifications = errors.New("no file notifications on this platform")

const treeMask = 0

func openInotify(uint32) (*inotify, error)                    { return nil, errNoNotifications }
func (*inotify) add(string) error                             { return errNoNotifications }
func (*inotify) drain(func(string, bool, bool)) (bool, error) { return false, errNoNotifications }
func (*inotify) close() error                                 { return nil }
