"""The Textual app, its screens and widgets: the only importers of Textual. Screens read data
through ``edgetui.store.queries``'s read side; widgets never do I/O. May import every package below it."""
