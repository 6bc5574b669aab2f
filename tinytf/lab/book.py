"""Small helpers shared by the book's notebooks (not part of the model)."""

REPO_URL = "https://github.com/tinytf-book/tinytf"

# The first cell of every chapter, verbatim (tests/book/test_chapters_static.py checks it). It is tagged
# `remove-cell` (SETUP_TAGS): in a notebook (Colab, Binder, Jupyter) it runs first; the HTML page starts with
# the chapter's title.
SETUP_TAGS = ["remove-cell"]
SETUP_CELL = f'''# Set-up: installs tinytf from the book's repository when it is missing (as on Colab).
# Where tinytf is already installed (Binder, a local clone) this cell does nothing.
try:
    import tinytf
except ImportError:
    %pip install -q "tinytf[viz] @ git+{REPO_URL}"
    try:
        from google.colab import output
        output.enable_custom_widget_manager()  # Colab needs this for ipywidgets 8
    except ImportError:
        pass
    import tinytf'''
