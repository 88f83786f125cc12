"""The model taken apart: its components with their parameter accounting, shapes and references
(components, params), the drawn diagrams (diagram), and the TransformerLens-style hook names (hooks).
May import: spec, model."""
