namespace Prepack
{
    /// <summary>
    /// The prompt a chat request gets (Engine.RenderChat): the rendered text and
    /// its token ids, the template's markup as control tokens and the messages'
    /// text as text. Immutable.
    /// </summary>
    public sealed class ChatPrompt
    {
        internal ChatPrompt(Native.ChatPrompt n)
        {
            Text = n.Text;
            Ids = n.Ids.ToArray();
        }

        public string Text { get; private set; }
        /// <summary>The token ids, BOS first as the vocabulary says.</summary>
        public int[] Ids { get; private set; }

        public override string ToString()
        {
            return Text;
        }
    }
}
