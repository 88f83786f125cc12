"""Serving a class: the upload gate and the uploads it holds, the trace cache shared by sessions, the
launcher and the class server (several app processes behind nginx). May import: spec, model."""
