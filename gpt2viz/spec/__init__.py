"""The vocabulary every other layer speaks, and nothing of ours beneath it (torch-free).

Model sizes (config), the recorded names and their symbolic shapes (schema), the modes, the pinned
references, costs in FLOPs and bytes, glossary terms, the page registry (pages), where the app's own
files are (paths), and the rule of who may upload or download (serving). May import: nothing of ours
but itself."""
