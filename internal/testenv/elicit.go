package testenv

import "encoding/json"

// Elicitation is an elicitation/create request the driver's client
// received (MCPEPOCH_DRIVER_ELICITATION in its environment declares the
// capability).
type Elicitation struct {
	N      int `json:"n"`
	Params struct {
		Mode          string          `json:"mode"`
		Message       string          `json:"message"`
		URL           string          `json:"url"`
		ElicitationID string          `json:"elicitationId"`
		Schema        json.RawMessage `json:"requestedSchema"`
	} `json:"params"`
	Answered bool `json:"answered"`
}

// Elicitations returns the elicitation/create requests received so far,
// in order, and the elicitationIds of the
// notifications/elicitation/complete received.
func (c *Client) Elicitations() ([]Elicitation, []string) {
	c.t.Helper()
	var out struct {
		Elicitations []Elicitation `json:"elicitations"`
		Complete     []string      `json:"complete"`
	}
	if err := c.decode(c.must(map[string]any{"op": "elicitations"}, opTimeout), &out); err != nil {
		c.t.Fatalf("driver elicitations: %v", err)
	}
	return out.Elicitations, out.Complete
}

// Answer answers elicitation n with action ("accept", "decline",
// "cancel") and content (nil: none).
func (c *Client) Answer(n int, action string, content map[string]any) {
	c.t.Helper()
	op := map[string]any{"op": "answer", "n": n, "action": action}
	if content != nil {
		op["content"] = content
	}
	if err := c.decode(c.must(op, opTimeout), &struct{}{}); err != nil {
		c.t.Fatalf("driver answer %d: %v", n, err)
	}
}
