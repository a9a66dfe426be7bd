package main

import (
	"context"
	"errors"
	"strings"

	"github.com/mcpepoch/mcpepoch/templates"
)

func runTemplate(_ context.Context, args []string, stdio Stdio) error {
	fs := newFlags("template", stdio.Err, "NAME\n\nNAME is one of: "+strings.Join(templates.Names(), ", "))
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError("template takes one name: %s", strings.Join(templates.Names(), ", "))
	}
	b, err := templates.Get(fs.Arg(0))
	if err != nil {
		var ue *templates.UnknownError
		if errors.As(err, &ue) {
			return usageError("%v", err)
		}
		return err
	}
	_, err = stdio.Out.Write(b)
	return err
}
