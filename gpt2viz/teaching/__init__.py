"""What the app says to a learner: each page's computed notices (notices), the tour, the prompts
measured on the demo model, exercises and live checks, the lecturer's lessons (lessons), the Code
panel's snippets and the handout. May import: spec, model, anatomy, analysis."""
