"""Small helpers shared by the book's notebooks (not part of the model)."""

REPO_URL = "https://github.com/tinytf-book/tinytf"

# The first cell of every chapter, verbatim (tests/test_chapters_static.py checks it).
SETUP_CELL = f'''# Set-up for Colab and Binder: installs tinytf from the book's repository only when it is missing.
# Locally and in CI tinytf is already installed, so this cell does nothing.
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
