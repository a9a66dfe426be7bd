package main

import "github.com/mcpepoch/mcpepoch/internal/termsafe"

// printable escapes a string that a server, a host or a file wrote (tool
// names, descriptions, annotations, grant scopes, paths) before it is
// printed for a person; see termsafe.Escape.
func printable(s string) string { return termsafe.Escape(s) }

// printableText escapes text of our own making that quotes names with %q
// already, such as error messages; see termsafe.EscapeText.
func printableText(s string) string { return termsafe.EscapeText(s) }

// printableList is printable of each element of l, joined by sep.
func printableList(l []string, sep string) string { return termsafe.Join(l, sep) }
