/// The demo chat page served at `/`: one self-contained HTML file, no CDN.
enum DemoPage {
    static let html = """
    <!doctype html><meta charset="utf-8"><title>Warren demo</title>
    <p>Warren demo page (coming with the bridge).</p>
    """
}
