"""HTML renderings of shasweep results: self-contained pages (Bokeh inlined, no network at view time).

``page`` assembles a page from HTML tables and Bokeh figures, ``plots`` builds the figures, ``sweep``
renders one sweep's report.
"""
