package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// maxHistory is the number of adjustments kept in the data file, newest last.
const maxHistory = 100

// inventory is the content of the data file.
type inventory struct {
	Stock   map[string]int `json:"stock"`
	History []adjustment   `json:"history"`
	Orders  []order        `json:"orders,omitempty"` // inventory_order calls, newest last
}

// adjustment records one successful inventory_adjust call.
type adjustment struct {
	SKU      string `json:"sku"`
	Delta    int    `json:"delta"`
	Quantity int    `json:"quantity"` // after the change
	Revision string `json:"revision"` // of the build that made the change
}

// store reads and writes the data file. Its mutex serializes read-modify-write
// cycles so that concurrent calls never lose an update.
type store struct {
	file string
	mu   sync.Mutex
}

// load reads the data file; a missing file is an empty inventory. A file of
// another shape (such as the flat one of inventory-node) is an error rather
// than an empty inventory, so that it is never overwritten.
func (s *store) load() (*inventory, error) {
	inv := &inventory{Stock: map[string]int{}}
	data, err := os.ReadFile(s.file)
	if errors.Is(err, fs.ErrNotExist) {
		return inv, nil
	}
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(inv); err != nil {
		return nil, fmt.Errorf("%s: %v", s.file, err)
	}
	if inv.Stock == nil {
		inv.Stock = map[string]int{}
	}
	return inv, nil
}

// update loads the inventory, applies change and, if change succeeds, writes
// the result back atomically.
func (s *store) update(change func(*inventory) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	inv, err := s.load()
	if err != nil {
		return err
	}
	if err := change(inv); err != nil {
		return err
	}
	if n := len(inv.History); n > maxHistory {
		inv.History = inv.History[n-maxHistory:]
	}
	if n := len(inv.Orders); n > maxHistory {
		inv.Orders = inv.Orders[n-maxHistory:]
	}
	data, err := json.MarshalIndent(inv, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(s.file, append(data, '\n'))
}

// writeFileAtomic replaces name with data: temp file in the same directory,
// fsync, rename. The directory is created if needed.
func writeFileAtomic(name string, data []byte) error {
	dir := filepath.Dir(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, filepath.Base(name)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // fails harmlessly after the rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), name)
}
